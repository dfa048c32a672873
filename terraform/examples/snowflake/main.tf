# Example: the Snowflake side of hudi-sync for the tables under s3://<bucket_name>/<prefix>/.

terraform {
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
    snowflake = {
      source  = "snowflakedb/snowflake"
      version = ">= 2.15, < 3.0"
    }
  }
}

provider "aws" {
  region = var.aws_region
}

# Credentials come from the environment (SNOWFLAKE_ORGANIZATION_NAME, SNOWFLAKE_ACCOUNT_NAME,
# SNOWFLAKE_USER, SNOWFLAKE_AUTHENTICATOR, SNOWFLAKE_PRIVATE_KEY, ...). The role must be able
# to create integrations, databases and roles (ACCOUNTADMIN, or a role granted CREATE
# INTEGRATION, CREATE DATABASE and CREATE ROLE).
provider "snowflake" {
  role = var.snowflake_admin_role

  # Preview resources of the provider: the storage integration, and (for iceberg) the
  # external volume and the object-store catalog integration.
  preview_features_enabled = [
    "snowflake_storage_integration_resource",
    "snowflake_external_volume_resource",
    "snowflake_catalog_integration_object_storage_resource",
  ]
}

module "snowflake_sync" {
  source = "../../modules/snowflake_sync"

  bucket_name     = var.bucket_name
  table_prefixes  = var.table_prefixes
  database        = var.database
  schema          = var.schema
  create_database = var.create_database
  create_schema   = var.create_schema
  warehouse       = var.warehouse
  sync_user       = var.sync_user
  iceberg         = var.iceberg
}
