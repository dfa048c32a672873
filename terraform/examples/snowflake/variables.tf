variable "aws_region" {
  description = "AWS region of the provider (IAM is global; any region works)."
  type        = string
  default     = "us-east-1"
}

variable "snowflake_admin_role" {
  description = "Snowflake role Terraform runs as; it creates the integration, database, schema and sync role."
  type        = string
  default     = "ACCOUNTADMIN"
}

variable "bucket_name" {
  description = "Existing S3 bucket holding the Hudi tables."
  type        = string
}

variable "table_prefixes" {
  description = "Paths of the Hudi tables inside the bucket, without leading or trailing slash."
  type        = list(string)
  default     = ["trips"]
}

variable "database" {
  description = "Snowflake database for the external tables and views."
  type        = string
  default     = "HUDI"
}

variable "schema" {
  description = "Snowflake schema for the external tables and views."
  type        = string
  default     = "SYNC"
}

variable "create_database" {
  description = "Create the database (true) or use an existing one (false)."
  type        = bool
  default     = true
}

variable "create_schema" {
  description = "Create the schema (true) or use an existing one (false)."
  type        = bool
  default     = true
}

variable "warehouse" {
  description = "Existing warehouse the sync runs on."
  type        = string
}

variable "sync_user" {
  description = "Optional existing Snowflake user the sync logs in as; it is granted the sync role."
  type        = string
  default     = null
}

variable "iceberg" {
  description = "NAME_iceberg over the published Iceberg metadata: off, beside or only (creates the external volume and catalog integration)."
  type        = string
  default     = "off"
}
