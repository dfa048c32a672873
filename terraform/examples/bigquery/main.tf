# Example: the BigQuery side of hudi-sync for the tables under gs://<bucket_name>/<prefix>.

terraform {
  required_version = ">= 1.5"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0, < 8.0"
    }
  }
}

provider "google" {
  project = var.project_id
}

module "bigquery_sync" {
  source = "../../modules/bigquery_sync"

  project_id                = var.project_id
  location                  = var.location
  dataset_id                = var.dataset_id
  bucket_name               = var.bucket_name
  create_bucket             = var.create_bucket
  table_prefixes            = var.table_prefixes
  kms_key_name              = var.kms_key_name
  log_bucket                = var.log_bucket
  create_biglake_connection = var.create_biglake_connection
  iceberg                   = var.iceberg
}
