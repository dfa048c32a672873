variable "project_id" {
  description = "Google Cloud project that holds the bucket, the dataset, the service account and (optionally) the BigLake connection."
  type        = string

  validation {
    condition     = can(regex("^(?:[a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits or hyphens, optionally domain-scoped as example.com:project)."
  }
}

variable "location" {
  description = "Location of the dataset, of a created bucket and of the BigLake connection (e.g. US, EU, europe-west1). BigQuery reads external data only from a bucket in a compatible location."
  type        = string
  default     = "US"
}

variable "dataset_id" {
  description = "BigQuery dataset the sync creates its external tables and views in (hoodie.gcp.bigquery.sync.dataset_name)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_]{1,1024}$", var.dataset_id))
    error_message = "dataset_id may contain only letters, digits and underscores (at most 1024)."
  }
}

variable "bucket_name" {
  description = "Name of the GCS bucket that holds the Hudi tables: created when create_bucket is true, otherwise an existing bucket (which must have uniform bucket-level access, because the manifest-write grant is an IAM condition)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be a GCS bucket name: 3-63 lowercase letters, digits, dots, hyphens or underscores."
  }
}

variable "create_bucket" {
  description = "Create the bucket (true) or use the existing bucket named bucket_name (false)."
  type        = bool
  default     = true
}

variable "table_prefixes" {
  description = "Paths of the Hudi tables inside the bucket (e.g. [\"trips\", \"lake/orders\"]), without leading or trailing slash. Each gets its own manifest-write grant, source URI prefix and properties."
  type        = list(string)

  validation {
    condition     = length(var.table_prefixes) > 0
    error_message = "table_prefixes must name at least one table."
  }

  validation {
    condition = alltrue([
      for p in var.table_prefixes :
      length(p) > 0 && !startswith(p, "/") && !endswith(p, "/") && !strcontains(p, "//")
    ])
    error_message = "Each table prefix must be non-empty, without a leading or trailing slash, and without '//'."
  }

  validation {
    condition     = length(distinct(var.table_prefixes)) == length(var.table_prefixes)
    error_message = "table_prefixes must not repeat a prefix."
  }
}

variable "kms_key_name" {
  description = "Optional Cloud KMS key (projects/.../locations/.../keyRings/.../cryptoKeys/...) used as the default encryption key of a created bucket and of the dataset. Null keeps Google-managed encryption. The Cloud Storage and BigQuery service agents need roles/cloudkms.cryptoKeyEncrypterDecrypter on the key."
  type        = string
  default     = null
}

variable "log_bucket" {
  description = "Optional existing bucket that receives usage and storage logs of a created bucket. Null disables access logging."
  type        = string
  default     = null
}

variable "service_account_id" {
  description = "Account id (the part before @) of the service account the sync runs as."
  type        = string
  default     = "hudi-sync"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.service_account_id))
    error_message = "service_account_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "manifest_writer_role_id" {
  description = "Id of the project-level custom role that can create, overwrite, read and delete objects; it is bound on the bucket only under each table's .hoodie/manifest/ prefix."
  type        = string
  default     = "hudiSyncManifestWriter"

  validation {
    condition     = can(regex("^[a-zA-Z0-9_.]{3,64}$", var.manifest_writer_role_id))
    error_message = "manifest_writer_role_id must be 3-64 letters, digits, underscores or dots."
  }
}

variable "create_biglake_connection" {
  description = "Create a BigLake (CLOUD_RESOURCE) connection for the external tables; its service account gets read access to the bucket and the sync may use the connection."
  type        = bool
  default     = false
}

variable "connection_id" {
  description = "Id of the BigLake connection created when create_biglake_connection is true."
  type        = string
  default     = "hudi-sync"

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,1024}$", var.connection_id))
    error_message = "connection_id may contain only letters, digits, underscores and hyphens."
  }
}

variable "iceberg" {
  description = "hoodie.gcp.bigquery.sync.iceberg of every table: off, beside (NAME_iceberg beside the manifest tables and views) or only. Not off needs create_biglake_connection."
  type        = string
  default     = "off"

  validation {
    condition     = contains(["off", "beside", "only"], var.iceberg)
    error_message = "iceberg must be off, beside or only."
  }
}

variable "labels" {
  description = "Labels added to the created bucket and dataset."
  type        = map(string)
  default     = {}
}
