# Infrastructure for `hudi-sync sync snowflake`: a storage integration with an AWS role that
# can only read the table prefixes (Snowflake never writes), a policy for the machine that
# runs the sync (read the tables, publish each table's manifest), and a Snowflake role that
# holds only the privileges one sync uses. The S3 bucket exists already and is not managed.

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

locals {
  partition  = data.aws_partition.current.partition
  bucket_arn = "arn:${local.partition}:s3:::${var.bucket_name}"

  # Built from the account id and the role's name, not from aws_iam_role.snowflake.arn: the
  # role's trust policy needs the integration's IAM user and external id, and the integration
  # needs the role's ARN, so referencing the resource would be a cycle.
  snowflake_role_arn = "arn:${local.partition}:iam::${data.aws_caller_identity.current.account_id}:role/${var.snowflake_iam_role_name}"

  stage_url = { for prefix in var.table_prefixes : prefix => "s3://${var.bucket_name}/${prefix}/" }

  # <t>_iceberg: one external volume over the bucket (metadata paths are relative to it), read
  # through its own role; its ARN is built from its name for the same reason as above.
  iceberg                    = var.iceberg != "off"
  iceberg_count              = local.iceberg ? 1 : 0
  volume_url                 = "s3://${var.bucket_name}/"
  snowflake_iceberg_role_arn = "arn:${local.partition}:iam::${data.aws_caller_identity.current.account_id}:role/${var.snowflake_iceberg_iam_role_name}"

  table_object_arns    = [for prefix in var.table_prefixes : "${local.bucket_arn}/${prefix}/*"]
  manifest_object_arns = [for prefix in var.table_prefixes : "${local.bucket_arn}/${prefix}/.hoodie/manifest/*"]
  # ListBucket is allowed only for keys under a table prefix ("<prefix>/*" also matches "<prefix>/").
  list_prefixes = [for prefix in var.table_prefixes : "${prefix}/*"]

  database = var.create_database ? snowflake_database.sync[0].name : var.database
  schema   = var.create_schema ? snowflake_schema.sync[0].name : var.schema
  # Fully qualified names as the grant resources expect them: "<database>"."<schema>".
  schema_fqn = "\"${local.database}\".\"${local.schema}\""

  # hoodie.snowflake.sync.* options of one table, and the target line (watch, backfill
  # and the hook sync nothing without it); the sync CLI reads them with --props.
  # table_name is left out: the CLI names the view after the Hudi table by default. The
  # iceberg options are left out when iceberg is off.
  sync_options = {
    for prefix in var.table_prefixes : prefix => {
      for key, value in {
        "hoodie.meta.sync.client.tool.class"                = "snowflake"
        "hoodie.snowflake.sync.database"                    = local.database
        "hoodie.snowflake.sync.schema"                      = local.schema
        "hoodie.snowflake.sync.warehouse"                   = var.warehouse
        "hoodie.snowflake.sync.role"                        = snowflake_account_role.sync.name
        "hoodie.snowflake.sync.storage_integration"         = snowflake_storage_integration.s3.name
        "hoodie.snowflake.sync.stage_url"                   = local.stage_url[prefix]
        "hoodie.snowflake.sync.iceberg"                     = local.iceberg ? var.iceberg : null
        "hoodie.snowflake.sync.iceberg.external_volume"     = local.iceberg ? snowflake_external_volume.iceberg[0].name : null
        "hoodie.snowflake.sync.iceberg.catalog_integration" = local.iceberg ? snowflake_catalog_integration_object_storage.iceberg[0].name : null
        "hoodie.snowflake.sync.iceberg.volume_url"          = local.iceberg ? local.volume_url : null
      } : key => value if value != null
    }
  }

  hudi_sync_properties = {
    for prefix, options in local.sync_options : prefix => join("", [
      for key in sort(keys(options)) : "${key}=${options[key]}\n"
    ])
  }
}

# -- AWS: the role Snowflake assumes (read only) -------------------------------------------

data "aws_iam_policy_document" "snowflake_trust" {
  statement {
    sid     = "SnowflakeStorageIntegration"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "AWS"
      identifiers = [snowflake_storage_integration.s3.storage_aws_iam_user_arn]
    }

    condition {
      test     = "StringEquals"
      variable = "sts:ExternalId"
      values   = [snowflake_storage_integration.s3.storage_aws_external_id]
    }
  }
}

data "aws_iam_policy_document" "snowflake_read" {
  statement {
    sid       = "ReadTableObjects"
    effect    = "Allow"
    actions   = ["s3:GetObject", "s3:GetObjectVersion"]
    resources = local.table_object_arns
  }

  statement {
    sid       = "ListTablePrefixes"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = local.list_prefixes
    }
  }

  # GetBucketLocation has no s3:prefix key, so it cannot share the statement above (the
  # condition would never match); it reveals only the bucket's region.
  statement {
    sid       = "BucketLocation"
    effect    = "Allow"
    actions   = ["s3:GetBucketLocation"]
    resources = [local.bucket_arn]
  }
}

resource "aws_iam_role" "snowflake" {
  name                 = var.snowflake_iam_role_name
  path                 = "/"
  description          = "Assumed by the Snowflake storage integration ${var.storage_integration_name}; reads the Hudi table prefixes only."
  assume_role_policy   = data.aws_iam_policy_document.snowflake_trust.json
  max_session_duration = 3600
}

resource "aws_iam_role_policy" "snowflake_read" {
  name   = "hudi-sync-read-tables"
  role   = aws_iam_role.snowflake.id
  policy = data.aws_iam_policy_document.snowflake_read.json
}

# -- AWS: the role the external volume assumes (read only), for <t>_iceberg ------------------

# The volume's own IAM user and external id, from DESCRIBE EXTERNAL VOLUME.
data "aws_iam_policy_document" "snowflake_iceberg_trust" {
  count = local.iceberg_count

  statement {
    sid     = "SnowflakeExternalVolume"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "AWS"
      identifiers = [snowflake_external_volume.iceberg[0].describe_output[0].storage_locations[0].s3_storage_location[0].storage_aws_iam_user_arn]
    }

    condition {
      test     = "StringEquals"
      variable = "sts:ExternalId"
      values   = [snowflake_external_volume.iceberg[0].describe_output[0].storage_locations[0].s3_storage_location[0].storage_aws_external_id]
    }
  }
}

resource "aws_iam_role" "snowflake_iceberg" {
  count = local.iceberg_count

  name                 = var.snowflake_iceberg_iam_role_name
  path                 = "/"
  description          = "Assumed by the Snowflake external volume ${var.external_volume_name}; reads the Hudi table prefixes only."
  assume_role_policy   = data.aws_iam_policy_document.snowflake_iceberg_trust[0].json
  max_session_duration = 3600
}

# The same read-only statements as the storage integration's role: the table prefixes (their
# base files, and the Iceberg metadata under <prefix>/.hoodie/manifest/iceberg/), nothing else.
resource "aws_iam_role_policy" "snowflake_iceberg_read" {
  count = local.iceberg_count

  name   = "hudi-sync-read-tables"
  role   = aws_iam_role.snowflake_iceberg[0].id
  policy = data.aws_iam_policy_document.snowflake_read.json
}

# -- AWS: the policy for the machine that runs hudi-sync ------------------------------------

data "aws_iam_policy_document" "sync_runner" {
  # Reads the tables with the same statements as Snowflake's role ...
  source_policy_documents = [data.aws_iam_policy_document.snowflake_read.json]

  # ... and publishes each table's manifest itself; nothing else in the bucket is writable.
  statement {
    sid       = "WriteManifests"
    effect    = "Allow"
    actions   = ["s3:PutObject", "s3:DeleteObject"]
    resources = local.manifest_object_arns
  }
}

resource "aws_iam_policy" "sync_runner" {
  name        = var.sync_runner_policy_name
  path        = "/"
  description = "hudi-sync runner: read the Hudi tables in ${var.bucket_name}, write only their .hoodie/manifest/ objects."
  policy      = data.aws_iam_policy_document.sync_runner.json
}

# -- Snowflake ------------------------------------------------------------------------------

resource "snowflake_storage_integration" "s3" {
  name                      = var.storage_integration_name
  comment                   = "hudi-sync: reads the Hudi tables in s3://${var.bucket_name}/"
  type                      = "EXTERNAL_STAGE"
  enabled                   = true
  storage_provider          = "S3"
  storage_aws_role_arn      = local.snowflake_role_arn
  storage_allowed_locations = [for prefix in var.table_prefixes : local.stage_url[prefix]]
}

# Read-only (ALLOW_WRITES false): Snowflake reads the Iceberg metadata hudi-sync publishes and
# never writes to the bucket.
resource "snowflake_external_volume" "iceberg" {
  count = local.iceberg_count

  name         = var.external_volume_name
  comment      = "hudi-sync: reads the Iceberg metadata published under s3://${var.bucket_name}/<table>/.hoodie/manifest/iceberg/"
  allow_writes = "false"

  storage_location {
    storage_location_name = "hudi-sync-${var.bucket_name}"
    storage_provider      = "S3"
    storage_base_url      = local.volume_url
    storage_aws_role_arn  = local.snowflake_iceberg_role_arn
  }
}

# Iceberg tables over metadata files in object storage (no remote catalog).
resource "snowflake_catalog_integration_object_storage" "iceberg" {
  count = local.iceberg_count

  name         = var.catalog_integration_name
  enabled      = true
  table_format = "ICEBERG"
  comment      = "hudi-sync: Iceberg tables over the metadata files hudi-sync publishes."
}

resource "snowflake_database" "sync" {
  count = var.create_database ? 1 : 0

  name    = var.database
  comment = "hudi-sync external tables and views."
}

resource "snowflake_schema" "sync" {
  count = var.create_schema ? 1 : 0

  database = local.database
  name     = var.schema
  comment  = "hudi-sync external tables and views."
}

resource "snowflake_account_role" "sync" {
  name    = var.account_role
  comment = "hudi-sync: creates stages, external tables and views in ${var.database}.${var.schema}."
}

# See the database (no CREATE SCHEMA, no ownership).
resource "snowflake_grant_privileges_to_account_role" "database_usage" {
  account_role_name = snowflake_account_role.sync.name
  privileges        = ["USAGE"]

  on_account_object {
    object_type = "DATABASE"
    object_name = local.database
  }
}

# Create the stage, the external tables and the view of each table in this schema only.
resource "snowflake_grant_privileges_to_account_role" "schema_objects" {
  account_role_name = snowflake_account_role.sync.name
  privileges        = ["USAGE", "CREATE STAGE", "CREATE EXTERNAL TABLE", "CREATE VIEW"]

  on_schema {
    schema_name = local.schema_fqn
  }
}

# Use the storage integration in CREATE STAGE (it cannot change the integration).
resource "snowflake_grant_privileges_to_account_role" "integration_usage" {
  account_role_name = snowflake_account_role.sync.name
  privileges        = ["USAGE"]

  on_account_object {
    object_type = "INTEGRATION"
    object_name = snowflake_storage_integration.s3.name
  }
}

# Run statements on the warehouse (no OPERATE or MODIFY: it cannot resize, suspend or reconfigure it).
resource "snowflake_grant_privileges_to_account_role" "warehouse_usage" {
  account_role_name = snowflake_account_role.sync.name
  privileges        = ["USAGE"]

  on_account_object {
    object_type = "WAREHOUSE"
    object_name = var.warehouse
  }
}

# <t>_iceberg: create Iceberg tables in this schema (it owns them, which ALTER ICEBERG TABLE …
# REFRESH requires), over this volume and through this catalog integration only.
resource "snowflake_grant_privileges_to_account_role" "iceberg_schema" {
  count = local.iceberg_count

  account_role_name = snowflake_account_role.sync.name
  privileges        = ["CREATE ICEBERG TABLE"]

  on_schema {
    schema_name = local.schema_fqn
  }
}

resource "snowflake_grant_privileges_to_account_role" "external_volume_usage" {
  count = local.iceberg_count

  account_role_name = snowflake_account_role.sync.name
  privileges        = ["USAGE"]

  on_account_object {
    object_type = "EXTERNAL VOLUME"
    object_name = snowflake_external_volume.iceberg[0].name
  }
}

resource "snowflake_grant_privileges_to_account_role" "catalog_integration_usage" {
  count = local.iceberg_count

  account_role_name = snowflake_account_role.sync.name
  privileges        = ["USAGE"]

  on_account_object {
    object_type = "INTEGRATION"
    object_name = snowflake_catalog_integration_object_storage.iceberg[0].name
  }
}

resource "snowflake_grant_account_role" "sync_user" {
  count = var.sync_user == null ? 0 : 1

  role_name = snowflake_account_role.sync.name
  user_name = var.sync_user
}
