# Named after the options of `hudi-sync sync bigquery` (hoodie.gcp.bigquery.sync.*).

output "project_id" {
  description = "hoodie.gcp.bigquery.sync.project_id: the project of the dataset."
  value       = var.project_id
}

output "dataset_name" {
  description = "hoodie.gcp.bigquery.sync.dataset_name: the dataset the sync writes to."
  value       = google_bigquery_dataset.sync.dataset_id
}

output "dataset_location" {
  description = "hoodie.gcp.bigquery.sync.dataset_location: the dataset's location."
  value       = google_bigquery_dataset.sync.location
}

output "big_lake_connection_id" {
  description = "hoodie.gcp.bigquery.sync.big_lake_connection_id: projects/<project>/locations/<location>/connections/<id>, or null when no connection was created."
  value       = local.big_lake_connection_id
}

output "iceberg_connection_id" {
  description = "hoodie.gcp.bigquery.sync.iceberg.connection: the BigLake connection NAME_iceberg reads through, or null when iceberg is off."
  value       = local.iceberg_connection_id
}

output "source_uri_prefix" {
  description = "hoodie.gcp.bigquery.sync.source_uri_prefix per table prefix: gs://<bucket>/<prefix>."
  value       = local.source_uri_prefix
}

output "bucket_name" {
  description = "The bucket that holds the tables."
  value       = local.bucket
}

output "service_account_email" {
  description = "Email of the service account to run the sync as (impersonate it or attach it to the machine that runs hudi-sync)."
  value       = google_service_account.sync.email
}

output "hudi_sync_properties" {
  description = "Per table prefix, a Java properties file (its target line included) for `hudi-sync watch`, `backfill` and `sync bigquery gs://<bucket>/<prefix> --props FILE`."
  value       = local.hudi_sync_properties
}
