variable "bucket_name" {
  description = "Existing S3 bucket that holds the Hudi tables; this module does not create or change it."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be an S3 bucket name: 3-63 lowercase letters, digits, dots or hyphens."
  }
}

variable "table_prefixes" {
  description = "Paths of the Hudi tables inside the bucket (e.g. [\"trips\", \"lake/orders\"]), without leading or trailing slash. Snowflake may read only these prefixes; the sync runner may write only their .hoodie/manifest/ folders."
  type        = list(string)

  validation {
    condition     = length(var.table_prefixes) > 0
    error_message = "table_prefixes must name at least one table."
  }

  validation {
    condition = alltrue([
      for p in var.table_prefixes :
      length(p) > 0 && !startswith(p, "/") && !endswith(p, "/") && !strcontains(p, "//") && !strcontains(p, "*")
    ])
    error_message = "Each table prefix must be non-empty, without a leading or trailing slash, '//' or '*'."
  }

  validation {
    condition     = length(distinct(var.table_prefixes)) == length(var.table_prefixes)
    error_message = "table_prefixes must not repeat a prefix."
  }
}

variable "snowflake_iam_role_name" {
  description = "Name of the AWS IAM role Snowflake's storage integration assumes to read the tables."
  type        = string
  default     = "hudi-sync-snowflake"

  validation {
    condition     = can(regex("^[A-Za-z0-9+=,.@_-]{1,64}$", var.snowflake_iam_role_name))
    error_message = "snowflake_iam_role_name must be a valid IAM role name (at most 64 characters)."
  }
}

variable "sync_runner_policy_name" {
  description = "Name of the AWS IAM policy for the machine that runs hudi-sync (read the tables, write their manifests). Attach it to that machine's role or user."
  type        = string
  default     = "hudi-sync-runner"

  validation {
    condition     = can(regex("^[A-Za-z0-9+=,.@_-]{1,128}$", var.sync_runner_policy_name))
    error_message = "sync_runner_policy_name must be a valid IAM policy name (at most 128 characters)."
  }
}

variable "storage_integration_name" {
  description = "Name of the Snowflake storage integration (hoodie.snowflake.sync.storage_integration)."
  type        = string
  default     = "HUDI_SYNC_S3"

  validation {
    condition     = can(regex("^[A-Z_][A-Z0-9_$]{0,254}$", var.storage_integration_name))
    error_message = "storage_integration_name must be an upper-case Snowflake identifier (A-Z, digits, _ and $, not starting with a digit): the provider quotes names as given, and hudi-sync resolves such names upper-cased, as Snowflake does for unquoted ones."
  }
}

variable "database" {
  description = "Snowflake database the sync writes to (hoodie.snowflake.sync.database). Created when create_database is true, otherwise it must exist. Upper case, so that the provider (which quotes names) and hudi-sync (which upper-cases names Snowflake would take unquoted) name the same object."
  type        = string

  validation {
    condition     = can(regex("^[A-Z_][A-Z0-9_$]{0,254}$", var.database))
    error_message = "database must be an upper-case Snowflake identifier (A-Z, digits, _ and $, not starting with a digit): the provider quotes names as given, and hudi-sync resolves such names upper-cased, as Snowflake does for unquoted ones."
  }
}

variable "schema" {
  description = "Snowflake schema the sync creates stages, external tables and views in (hoodie.snowflake.sync.schema). Created when create_schema is true, otherwise it must exist."
  type        = string

  validation {
    condition     = can(regex("^[A-Z_][A-Z0-9_$]{0,254}$", var.schema))
    error_message = "schema must be an upper-case Snowflake identifier (A-Z, digits, _ and $, not starting with a digit): the provider quotes names as given, and hudi-sync resolves such names upper-cased, as Snowflake does for unquoted ones."
  }
}

variable "create_database" {
  description = "Create the database (true) or use the existing database named by var.database (false)."
  type        = bool
  default     = true
}

variable "create_schema" {
  description = "Create the schema (true) or use the existing schema named by var.schema (false)."
  type        = bool
  default     = true
}

variable "warehouse" {
  description = "Existing Snowflake warehouse the sync runs its statements on (hoodie.snowflake.sync.warehouse); the sync role gets USAGE on it."
  type        = string

  validation {
    condition     = can(regex("^[A-Z_][A-Z0-9_$]{0,254}$", var.warehouse))
    error_message = "warehouse must be an upper-case Snowflake identifier (A-Z, digits, _ and $, not starting with a digit): the provider quotes names as given, and hudi-sync resolves such names upper-cased, as Snowflake does for unquoted ones."
  }
}

variable "account_role" {
  description = "Name of the Snowflake account role created for the sync (hoodie.snowflake.sync.role)."
  type        = string
  default     = "HUDI_SYNC"

  validation {
    condition     = can(regex("^[A-Z_][A-Z0-9_$]{0,254}$", var.account_role))
    error_message = "account_role must be an upper-case Snowflake identifier (A-Z, digits, _ and $, not starting with a digit): the provider quotes names as given, and hudi-sync resolves such names upper-cased, as Snowflake does for unquoted ones."
  }
}

variable "sync_user" {
  description = "Optional existing Snowflake user the sync logs in as; the sync role is granted to it. Null grants the role to no one."
  type        = string
  default     = null

  validation {
    condition     = var.sync_user == null || can(regex("^[A-Za-z0-9_$@.-]{1,255}$", var.sync_user))
    error_message = "sync_user must be a Snowflake user name."
  }
}

variable "iceberg" {
  description = "hoodie.snowflake.sync.iceberg of every table: off, beside (NAME_iceberg beside the stage, external tables and views) or only. Not off creates the external volume, the object-store catalog integration and the volume's read-only IAM role."
  type        = string
  default     = "off"

  validation {
    condition     = contains(["off", "beside", "only"], var.iceberg)
    error_message = "iceberg must be off, beside or only."
  }
}

variable "external_volume_name" {
  description = "Name of the Snowflake external volume over the bucket (hoodie.snowflake.sync.iceberg.external_volume), created when iceberg is not off."
  type        = string
  default     = "HUDI_SYNC_ICEBERG"

  validation {
    condition     = can(regex("^[A-Z_][A-Z0-9_$]{0,254}$", var.external_volume_name))
    error_message = "external_volume_name must be an upper-case Snowflake identifier (A-Z, digits, _ and $, not starting with a digit)."
  }
}

variable "catalog_integration_name" {
  description = "Name of the object-store catalog integration (hoodie.snowflake.sync.iceberg.catalog_integration), created when iceberg is not off."
  type        = string
  default     = "HUDI_SYNC_OBJECT_STORE"

  validation {
    condition     = can(regex("^[A-Z_][A-Z0-9_$]{0,254}$", var.catalog_integration_name))
    error_message = "catalog_integration_name must be an upper-case Snowflake identifier (A-Z, digits, _ and $, not starting with a digit)."
  }
}

variable "snowflake_iceberg_iam_role_name" {
  description = "Name of the AWS IAM role the external volume assumes to read the tables (read only, the table prefixes only)."
  type        = string
  default     = "hudi-sync-snowflake-iceberg"

  validation {
    condition     = can(regex("^[A-Za-z0-9+=,.@_-]{1,64}$", var.snowflake_iceberg_iam_role_name))
    error_message = "snowflake_iceberg_iam_role_name must be a valid IAM role name (at most 64 characters)."
  }
}
