# Named after the options of `hudi-sync sync snowflake` (hoodie.snowflake.sync.*). The
# connection settings (account, user, authenticator, private key) are not outputs: they are
# credentials and stay with whoever runs the sync.

output "account_role" {
  description = "hoodie.snowflake.sync.role: the account role the sync uses."
  value       = snowflake_account_role.sync.name
}

output "database" {
  description = "hoodie.snowflake.sync.database."
  value       = local.database
}

output "schema" {
  description = "hoodie.snowflake.sync.schema."
  value       = local.schema
}

output "warehouse" {
  description = "hoodie.snowflake.sync.warehouse."
  value       = var.warehouse
}

output "storage_integration" {
  description = "hoodie.snowflake.sync.storage_integration."
  value       = snowflake_storage_integration.s3.name
}

output "stage_url" {
  description = "hoodie.snowflake.sync.stage_url per table prefix: s3://<bucket>/<prefix>/."
  value       = local.stage_url
}

output "snowflake_iam_role_arn" {
  description = "ARN of the AWS role Snowflake's storage integration assumes (read only)."
  value       = aws_iam_role.snowflake.arn
}

output "sync_runner_policy_arn" {
  description = "ARN of the policy to attach to the role or user of the machine that runs hudi-sync."
  value       = aws_iam_policy.sync_runner.arn
}

output "sync_runner_policy_json" {
  description = "The sync runner policy document (read the tables, write only their .hoodie/manifest/ objects)."
  value       = data.aws_iam_policy_document.sync_runner.json
}

output "hudi_sync_properties" {
  description = "Per table prefix, a Java properties file (its target line included) for `hudi-sync watch`, `backfill` and `sync snowflake s3://<bucket>/<prefix> --props FILE`."
  value       = local.hudi_sync_properties
}

output "iceberg_external_volume" {
  description = "hoodie.snowflake.sync.iceberg.external_volume, or null when iceberg is off."
  value       = local.iceberg ? snowflake_external_volume.iceberg[0].name : null
}

output "iceberg_catalog_integration" {
  description = "hoodie.snowflake.sync.iceberg.catalog_integration, or null when iceberg is off."
  value       = local.iceberg ? snowflake_catalog_integration_object_storage.iceberg[0].name : null
}

output "iceberg_volume_url" {
  description = "hoodie.snowflake.sync.iceberg.volume_url: the external volume's storage base URL (the bucket), or null when iceberg is off."
  value       = local.iceberg ? local.volume_url : null
}
