output "account_role" {
  description = "hoodie.snowflake.sync.role"
  value       = module.snowflake_sync.account_role
}

output "database" {
  description = "hoodie.snowflake.sync.database"
  value       = module.snowflake_sync.database
}

output "schema" {
  description = "hoodie.snowflake.sync.schema"
  value       = module.snowflake_sync.schema
}

output "warehouse" {
  description = "hoodie.snowflake.sync.warehouse"
  value       = module.snowflake_sync.warehouse
}

output "storage_integration" {
  description = "hoodie.snowflake.sync.storage_integration"
  value       = module.snowflake_sync.storage_integration
}

output "stage_url" {
  description = "hoodie.snowflake.sync.stage_url per table prefix"
  value       = module.snowflake_sync.stage_url
}

output "sync_runner_policy_arn" {
  description = "Attach to the role or user of the machine that runs hudi-sync"
  value       = module.snowflake_sync.sync_runner_policy_arn
}

output "sync_runner_policy_json" {
  description = "The sync runner policy document"
  value       = module.snowflake_sync.sync_runner_policy_json
}

output "hudi_sync_properties" {
  description = "Per table prefix, the --props file of hudi-sync sync snowflake"
  value       = module.snowflake_sync.hudi_sync_properties
}

output "iceberg_external_volume" {
  description = "hoodie.snowflake.sync.iceberg.external_volume (null when iceberg is off)"
  value       = module.snowflake_sync.iceberg_external_volume
}

output "iceberg_catalog_integration" {
  description = "hoodie.snowflake.sync.iceberg.catalog_integration (null when iceberg is off)"
  value       = module.snowflake_sync.iceberg_catalog_integration
}

output "iceberg_volume_url" {
  description = "hoodie.snowflake.sync.iceberg.volume_url (null when iceberg is off)"
  value       = module.snowflake_sync.iceberg_volume_url
}
