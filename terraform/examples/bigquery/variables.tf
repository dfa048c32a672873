variable "project_id" {
  description = "Google Cloud project for the bucket, dataset and service account."
  type        = string
}

variable "location" {
  description = "Location of the dataset, bucket and connection."
  type        = string
  default     = "US"
}

variable "dataset_id" {
  description = "BigQuery dataset the sync writes to."
  type        = string
  default     = "hudi"
}

variable "bucket_name" {
  description = "GCS bucket holding the Hudi tables (created unless create_bucket is false)."
  type        = string
}

variable "create_bucket" {
  description = "Create the bucket (true) or use an existing one (false)."
  type        = bool
  default     = true
}

variable "table_prefixes" {
  description = "Paths of the Hudi tables inside the bucket, without leading or trailing slash."
  type        = list(string)
  default     = ["trips"]
}

variable "kms_key_name" {
  description = "Optional Cloud KMS key for the bucket's and dataset's default encryption."
  type        = string
  default     = null
}

variable "log_bucket" {
  description = "Optional existing bucket for the created bucket's access logs."
  type        = string
  default     = null
}

variable "create_biglake_connection" {
  description = "Create a BigLake connection for the external tables."
  type        = bool
  default     = false
}

variable "iceberg" {
  description = "NAME_iceberg over the published Iceberg metadata: off, beside or only (needs create_biglake_connection)."
  type        = string
  default     = "off"
}
