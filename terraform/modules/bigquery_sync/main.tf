# Infrastructure for `hudi-sync sync bigquery`: the bucket holding the Hudi tables, the
# dataset the external tables and views go to, and a service account that can do exactly
# what one sync does (read the tables, publish each table's manifest, write the dataset,
# run query jobs), plus an optional BigLake connection.

locals {
  bucket = var.create_bucket ? google_storage_bucket.tables[0].name : var.bucket_name

  sync_member = "serviceAccount:${google_service_account.sync.email}"

  # The connection id BigQuery's ExternalDataConfiguration.connectionId accepts in its
  # resource-name form: projects/<project>/locations/<location>/connections/<id>.
  big_lake_connection_id = var.create_biglake_connection ? google_bigquery_connection.biglake[0].name : null

  # <t>_iceberg reads the published Iceberg metadata through the same connection (its
  # service account already reads the bucket); null when the Iceberg table is off.
  iceberg_connection_id = var.iceberg == "off" ? null : local.big_lake_connection_id

  source_uri_prefix = { for prefix in var.table_prefixes : prefix => "gs://${local.bucket}/${prefix}" }

  # hoodie.gcp.bigquery.sync.* options of one table, and the target line (watch, backfill
  # and the hook sync nothing without it); the sync CLI reads them with --props.
  # table_name (the view's name) is the prefix with '/' replaced by '_'. Options without a
  # value (big_lake_connection_id when no connection is created, or with iceberg=only,
  # where no table over base files reads it and the sync refuses it) are left out.
  sync_options = {
    for prefix in var.table_prefixes : prefix => {
      for key, value in {
        "hoodie.meta.sync.client.tool.class"              = "bigquery"
        "hoodie.gcp.bigquery.sync.project_id"             = var.project_id
        "hoodie.gcp.bigquery.sync.dataset_name"           = google_bigquery_dataset.sync.dataset_id
        "hoodie.gcp.bigquery.sync.dataset_location"       = google_bigquery_dataset.sync.location
        "hoodie.gcp.bigquery.sync.table_name"             = replace(prefix, "/", "_")
        "hoodie.gcp.bigquery.sync.source_uri_prefix"      = local.source_uri_prefix[prefix]
        "hoodie.gcp.bigquery.sync.big_lake_connection_id" = var.iceberg == "only" ? null : local.big_lake_connection_id
        "hoodie.gcp.bigquery.sync.iceberg"                = var.iceberg == "off" ? null : var.iceberg
        "hoodie.gcp.bigquery.sync.iceberg.connection"     = local.iceberg_connection_id
      } : key => value if value != null
    }
  }

  hudi_sync_properties = {
    for prefix, options in local.sync_options : prefix => join("", [
      for key in sort(keys(options)) : "${key}=${options[key]}\n"
    ])
  }
}

# -- storage ------------------------------------------------------------------------------

resource "google_storage_bucket" "tables" {
  count = var.create_bucket ? 1 : 0

  project       = var.project_id
  name          = var.bucket_name
  location      = var.location
  storage_class = "STANDARD"
  labels        = var.labels

  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  versioning {
    enabled = true
  }

  dynamic "encryption" {
    for_each = var.kms_key_name == null ? [] : [var.kms_key_name]
    content {
      default_kms_key_name = encryption.value
    }
  }

  dynamic "logging" {
    for_each = var.log_bucket == null ? [] : [var.log_bucket]
    content {
      log_bucket        = logging.value
      log_object_prefix = var.bucket_name
    }
  }
}

# -- BigQuery -------------------------------------------------------------------------------

resource "google_bigquery_dataset" "sync" {
  project                    = var.project_id
  dataset_id                 = var.dataset_id
  location                   = var.location
  description                = "External tables and views published by hudi-sync."
  labels                     = var.labels
  delete_contents_on_destroy = false

  lifecycle {
    precondition {
      condition     = var.iceberg == "off" || var.create_biglake_connection
      error_message = "iceberg (beside or only) reads the Iceberg metadata through the BigLake connection: set create_biglake_connection = true."
    }
  }

  dynamic "default_encryption_configuration" {
    for_each = var.kms_key_name == null ? [] : [var.kms_key_name]
    content {
      kms_key_name = default_encryption_configuration.value
    }
  }
}

resource "google_bigquery_connection" "biglake" {
  count = var.create_biglake_connection ? 1 : 0

  project       = var.project_id
  location      = var.location
  connection_id = var.connection_id
  friendly_name = "hudi-sync BigLake"
  description   = "Reads the Hudi tables' files for the external tables hudi-sync creates."

  cloud_resource {}
}

# -- the sync's identity ----------------------------------------------------------------------

resource "google_service_account" "sync" {
  project      = var.project_id
  account_id   = var.service_account_id
  display_name = "hudi-sync"
  description  = "Runs hudi-sync: reads the Hudi tables, publishes their manifests, writes the dataset."
}

# The only write access to storage: create, overwrite, read and delete single objects. Bound
# on the bucket below with a condition that limits it to each table's manifest prefix.
resource "google_project_iam_custom_role" "manifest_writer" {
  project     = var.project_id
  role_id     = var.manifest_writer_role_id
  title       = "hudi-sync manifest writer"
  description = "Create, overwrite, read and delete objects; bound only under <table>/.hoodie/manifest/."
  permissions = [
    "storage.objects.create",
    "storage.objects.delete",
    "storage.objects.get",
    "storage.objects.update",
  ]
}

# Read every table's files. Listing is a bucket-level permission, so this binding is on the
# bucket without a condition.
resource "google_storage_bucket_iam_member" "sync_read" {
  bucket = local.bucket
  role   = "roles/storage.objectViewer"
  member = local.sync_member
}

# Publish the manifest: the writer role, only for objects under <prefix>/.hoodie/manifest/.
resource "google_storage_bucket_iam_member" "sync_manifest_write" {
  for_each = toset(var.table_prefixes)

  bucket = local.bucket
  role   = google_project_iam_custom_role.manifest_writer.name
  member = local.sync_member

  condition {
    title       = "hudi-sync manifest ${substr(sha256(each.value), 0, 12)}"
    description = "Only objects under ${each.value}/.hoodie/manifest/"
    expression  = "resource.name.startsWith(\"projects/_/buckets/${local.bucket}/objects/${each.value}/.hoodie/manifest/\")"
  }
}

# Create and replace the external tables and views, in this dataset only.
resource "google_bigquery_dataset_iam_member" "sync_data_editor" {
  project    = var.project_id
  dataset_id = google_bigquery_dataset.sync.dataset_id
  role       = "roles/bigquery.dataEditor"
  member     = local.sync_member
}

# Run the query and DDL jobs of a sync (jobs are project-level resources).
resource "google_project_iam_member" "sync_job_user" {
  project = var.project_id
  role    = "roles/bigquery.jobUser"
  member  = local.sync_member
}

# Attach the BigLake connection to the tables it creates.
resource "google_bigquery_connection_iam_member" "sync_connection_user" {
  count = var.create_biglake_connection ? 1 : 0

  project       = var.project_id
  location      = google_bigquery_connection.biglake[0].location
  connection_id = google_bigquery_connection.biglake[0].connection_id
  role          = "roles/bigquery.connectionUser"
  member        = local.sync_member
}

# The connection's own (Google-created) service account reads the files for BigQuery: the
# base files, and for <t>_iceberg the Iceberg metadata under <table>/.hoodie/manifest/iceberg/
# (read only; the sync's own writer binding above publishes it).
resource "google_storage_bucket_iam_member" "connection_read" {
  count = var.create_biglake_connection ? 1 : 0

  bucket = local.bucket
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_bigquery_connection.biglake[0].cloud_resource[0].service_account_id}"
}
