output "project_id" {
  description = "hoodie.gcp.bigquery.sync.project_id"
  value       = module.bigquery_sync.project_id
}

output "dataset_name" {
  description = "hoodie.gcp.bigquery.sync.dataset_name"
  value       = module.bigquery_sync.dataset_name
}

output "dataset_location" {
  description = "hoodie.gcp.bigquery.sync.dataset_location"
  value       = module.bigquery_sync.dataset_location
}

output "iceberg_connection_id" {
  description = "hoodie.gcp.bigquery.sync.iceberg.connection (null when iceberg is off)"
  value       = module.bigquery_sync.iceberg_connection_id
}

output "big_lake_connection_id" {
  description = "hoodie.gcp.bigquery.sync.big_lake_connection_id (null without a connection)"
  value       = module.bigquery_sync.big_lake_connection_id
}

output "source_uri_prefix" {
  description = "hoodie.gcp.bigquery.sync.source_uri_prefix per table prefix"
  value       = module.bigquery_sync.source_uri_prefix
}

output "service_account_email" {
  description = "The service account to run hudi-sync as"
  value       = module.bigquery_sync.service_account_email
}

output "hudi_sync_properties" {
  description = "Per table prefix, the --props file of hudi-sync sync bigquery"
  value       = module.bigquery_sync.hudi_sync_properties
}

output "bucket_name" {
  description = "The bucket holding the tables"
  value       = module.bigquery_sync.bucket_name
}
