"""terraform/: every file parses, the modules' interface, checkov, and least privilege.

There is no Terraform binary here, so the modules are read with python-hcl2 and the grants
are asserted on the parsed structure: widening a role, an S3 action or a Snowflake privilege
fails these tests. checkov runs from its own venv (scripts/checkov_env.sh).
"""

from __future__ import annotations

import json
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import hcl2
import pytest

from hudi_sync.config import SYNC_TOOLS
from hudi_sync.sync.hook import required_target_names

ROOT = Path(__file__).resolve().parent.parent
TERRAFORM = ROOT / "terraform"
MODULES = TERRAFORM / "modules"
EXAMPLES = TERRAFORM / "examples"
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"

# Plain values: no comments, no block markers, strings without their quotes.
OPTIONS = hcl2.SerializationOptions(
    with_comments=False, explicit_blocks=False, strip_string_quotes=True
)

BIGQUERY_OUTPUTS = {
    "project_id",
    "dataset_name",
    "dataset_location",
    "big_lake_connection_id",
    "source_uri_prefix",
    "service_account_email",
    "hudi_sync_properties",
    "iceberg_connection_id",
}
SNOWFLAKE_OUTPUTS = {
    "account_role",
    "database",
    "schema",
    "warehouse",
    "storage_integration",
    "stage_url",
    "sync_runner_policy_json",
    "hudi_sync_properties",
    "iceberg_external_volume",
    "iceberg_catalog_integration",
    "iceberg_volume_url",
}
BIGQUERY_KEYS = {
    f"hoodie.gcp.bigquery.sync.{name}"
    for name in (
        "project_id",
        "dataset_name",
        "dataset_location",
        "source_uri_prefix",
        "big_lake_connection_id",
        "table_name",  # the CLI requires it; the prefix with '/' replaced by '_'
        "iceberg",  # with iceberg.connection: left out (null) when iceberg is off
        "iceberg.connection",
    )
}
SNOWFLAKE_KEYS = {
    f"hoodie.snowflake.sync.{name}"
    for name in (
        "database",
        "schema",
        "warehouse",
        "role",
        "storage_integration",
        "stage_url",
        "iceberg",  # the iceberg.* keys are left out (null) when iceberg is off
        "iceberg.external_volume",
        "iceberg.catalog_integration",
        "iceberg.volume_url",
    )
}  # no table_name: `hudi-sync sync snowflake` defaults it to the Hudi table's name
FORBIDDEN_GCP_ROLES = {"roles/owner", "roles/editor", "roles/storage.admin", "roles/bigquery.admin"}
S3_READ = {"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:GetBucketLocation"}
S3_MANIFEST_WRITE = {"s3:PutObject", "s3:DeleteObject"}
MANIFEST_WRITER_PERMISSIONS = {
    "storage.objects.create",
    "storage.objects.delete",
    "storage.objects.get",
    "storage.objects.update",
}
SNOWFLAKE_GRANTS = {
    ("DATABASE", "USAGE"),
    ("SCHEMA", "USAGE"),
    ("SCHEMA", "CREATE STAGE"),
    ("SCHEMA", "CREATE EXTERNAL TABLE"),
    ("SCHEMA", "CREATE VIEW"),
    ("INTEGRATION", "USAGE"),
    ("WAREHOUSE", "USAGE"),
}
# With iceberg: Iceberg tables in the schema, over the volume, through the catalog integration.
SNOWFLAKE_ICEBERG_GRANTS = {
    ("SCHEMA", "${local.schema_fqn}", "CREATE ICEBERG TABLE"),
    ("EXTERNAL VOLUME", "${snowflake_external_volume.iceberg[0].name}", "USAGE"),
    (
        "INTEGRATION",
        "${snowflake_catalog_integration_object_storage.iceberg[0].name}",
        "USAGE",
    ),
}
SKIP_COMMENT = re.compile(r"checkov:skip=([A-Z0-9_]*)(?::([^\n]*))?")


# -- reading the HCL -------------------------------------------------------------------------


def tf_files() -> list[Path]:
    return sorted(TERRAFORM.rglob("*.tf"))


@cache
def parse(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        parsed: dict[str, Any] = hcl2.load(handle, serialization_options=OPTIONS)
    return parsed


class Config:
    """The .tf files of one directory, merged: blocks by type (and name), locals flat."""

    def __init__(self, directory: Path) -> None:
        self.resources: dict[str, dict[str, dict[str, Any]]] = {}
        self.data: dict[str, dict[str, dict[str, Any]]] = {}
        self.variables: dict[str, dict[str, Any]] = {}
        self.outputs: dict[str, dict[str, Any]] = {}
        self.locals: dict[str, Any] = {}
        self.modules: dict[str, dict[str, Any]] = {}
        for path in sorted(directory.glob("*.tf")):
            parsed = parse(path)
            for kind, target in (("resource", self.resources), ("data", self.data)):
                for block in parsed.get(kind, []):
                    for type_name, named in block.items():
                        for name, body in named.items():
                            assert name not in target.setdefault(type_name, {}), (path, name)
                            target[type_name][name] = body
            for kind, flat in (
                ("variable", self.variables),
                ("output", self.outputs),
                ("module", self.modules),
            ):
                for block in parsed.get(kind, []):
                    for name, body in block.items():
                        assert name not in flat, (path, kind, name)
                        flat[name] = body
            for block in parsed.get("locals", []):
                self.locals.update(block)

    def resolve(self, value: Any) -> str:
        """A string expression with each ``local.NAME`` reference replaced by its definition
        (repeatedly, so locals built from locals are followed)."""
        text = value if isinstance(value, str) else json.dumps(value)
        for _ in range(10):
            expanded = re.sub(
                r"local\.([A-Za-z_][A-Za-z0-9_]*)",
                lambda m: f"({self._local(m.group(1))})",
                text,
            )
            if expanded == text:
                return text
            text = expanded
        raise AssertionError(f"locals nest too deeply in {value!r}")

    def _local(self, name: str) -> str:
        assert name in self.locals, f"local.{name} is not defined"
        value = self.locals[name]
        return value if isinstance(value, str) else json.dumps(value)


@cache
def module(name: str) -> Config:
    return Config(MODULES / name)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def strings_in(value: Any) -> list[str]:
    """Every string anywhere in a parsed value (keys included)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings_in(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    return []


def quoted_keys(expression: str, prefix: str) -> set[str]:
    """Object keys ``"prefix…" =`` written in an HCL expression (e.g. a for expression,
    which python-hcl2 keeps as text)."""
    return set(re.findall(rf'"({re.escape(prefix)}[A-Za-z0-9_.]+)"\s*=', expression))


# -- files, variables, outputs -----------------------------------------------------------------


def test_the_expected_files_exist() -> None:
    for name in ("bigquery_sync", "snowflake_sync"):
        for file in ("main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"):
            assert (MODULES / name / file).is_file(), f"modules/{name}/{file}"
    for name in ("bigquery", "snowflake"):
        for file in ("main.tf", "terraform.tfvars.example", "README.md"):
            assert (EXAMPLES / name / file).is_file(), f"examples/{name}/{file}"
    assert (TERRAFORM / "README.md").is_file()


@pytest.mark.parametrize("path", tf_files(), ids=lambda p: str(p.relative_to(TERRAFORM)))
def test_every_tf_file_parses(path: Path) -> None:
    parsed = parse(path)
    assert parsed, f"{path} is empty"


@pytest.mark.parametrize("path", tf_files(), ids=lambda p: str(p.relative_to(TERRAFORM)))
def test_every_variable_has_a_description_and_a_type(path: Path) -> None:
    for block in parse(path).get("variable", []):
        for name, body in block.items():
            assert str(body.get("description", "")).strip(), f"{path}: {name} has no description"
            assert body.get("type"), f"{path}: {name} has no type"


@pytest.mark.parametrize("name", ["bigquery_sync", "snowflake_sync"])
def test_table_prefixes_are_validated(name: str) -> None:
    variable = module(name).variables["table_prefixes"]
    assert variable["type"] == "${list(string)}"
    conditions = " ".join(v["condition"] for v in variable["validation"])
    for check in ('startswith(p, "/")', 'endswith(p, "/")', "length(var.table_prefixes) > 0"):
        assert check in conditions, check


@pytest.mark.parametrize(
    "variable", ["storage_integration_name", "database", "schema", "warehouse", "account_role"]
)
def test_snowflake_names_are_the_ones_the_cli_resolves(variable: str) -> None:
    """The provider quotes names as given; the CLI upper-cases names Snowflake would take
    unquoted. Only upper-case names mean the same object to both."""
    from hudi_sync.warehouse.snowflake.schema import object_name

    (validation,) = module("snowflake_sync").variables[variable]["validation"]
    pattern = re.search(r'regex\("(.+?)", var\.', validation["condition"])
    assert pattern is not None, validation["condition"]
    for name in ("HUDI_SYNC", "hudi_sync", "Hudi", "HUDI SYNC"):
        accepted = re.fullmatch(pattern[1], name) is not None
        assert accepted == (object_name(name) == name and " " not in name), name


@pytest.mark.parametrize(
    ("name", "expected"),
    [("bigquery_sync", BIGQUERY_OUTPUTS), ("snowflake_sync", SNOWFLAKE_OUTPUTS)],
)
def test_module_outputs(name: str, expected: set[str]) -> None:
    outputs = module(name).outputs
    assert expected <= set(outputs), expected - set(outputs)
    for output, body in outputs.items():
        assert str(body.get("description", "")).strip(), f"{name}: output {output}"


@pytest.mark.parametrize(
    ("example", "module_name", "expected"),
    [
        ("bigquery", "bigquery_sync", BIGQUERY_OUTPUTS),
        ("snowflake", "snowflake_sync", SNOWFLAKE_OUTPUTS),
    ],
)
def test_examples_call_the_module_and_pass_its_outputs_through(
    example: str, module_name: str, expected: set[str]
) -> None:
    config = Config(EXAMPLES / example)
    assert config.modules[module_name]["source"] == f"../../modules/{module_name}"
    for output in expected:
        assert config.outputs[output]["value"] == f"${{module.{module_name}.{output}}}", output
    required = {v for v, body in module(module_name).variables.items() if "default" not in body}
    assert required <= set(config.modules[module_name]), required


def test_the_snowflake_example_enables_the_storage_integration_preview() -> None:
    parsed = parse(EXAMPLES / "snowflake" / "main.tf")
    provider = next(b["snowflake"] for b in parsed["provider"] if "snowflake" in b)
    assert "snowflake_storage_integration_resource" in provider["preview_features_enabled"]


@pytest.mark.parametrize(
    ("name", "prefix", "expected"),
    [
        ("bigquery_sync", "hoodie.gcp.bigquery.sync.", BIGQUERY_KEYS),
        ("snowflake_sync", "hoodie.snowflake.sync.", SNOWFLAKE_KEYS),
    ],
)
def test_properties_output_has_the_cli_option_keys(
    name: str, prefix: str, expected: set[str]
) -> None:
    config = module(name)
    assert config.outputs["hudi_sync_properties"]["value"] == "${local.hudi_sync_properties}"
    rendered = config.resolve(config.locals["hudi_sync_properties"])
    # one "key=value" line per option, sorted by key, for each table's option map
    assert 'for key in sort(keys(options)) : "${key}=${options[key]}\\n"' in rendered
    assert "for prefix, options in (${{for prefix in var.table_prefixes : prefix =>" in rendered
    assert quoted_keys(rendered, prefix) == expected


@pytest.mark.parametrize(
    ("name", "target"), [("bigquery_sync", "bigquery"), ("snowflake_sync", "snowflake")]
)
def test_properties_output_names_its_target(name: str, target: str) -> None:
    """Without the target line, watch and backfill given the file would sync nothing
    (now refused in one line): each table's properties carry it, with the module's target."""
    rendered = module(name).resolve(module(name).locals["hudi_sync_properties"])
    key = re.escape(SYNC_TOOLS.key)
    assert re.findall(rf'"({key})"\s*=\s*"([a-z]+)"', rendered) == [(SYNC_TOOLS.key, target)]
    assert target in required_target_names({SYNC_TOOLS.key: target})


def test_bigquery_connection_id_is_the_connection_resource_name() -> None:
    config = module("bigquery_sync")
    value = config.resolve(config.outputs["big_lake_connection_id"]["value"])
    assert value == (
        "${(${var.create_biglake_connection ? google_bigquery_connection.biglake[0].name : null})}"
    )


# -- checkov -------------------------------------------------------------------------------------


def test_checkov_passes_with_no_failed_checks() -> None:
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV.relative_to(ROOT)} is missing: run scripts/checkov_env.sh first")
    result = subprocess.run(
        [
            str(CHECKOV),
            "--directory",
            str(TERRAFORM),
            "--framework",
            "terraform",
            "--output",
            "json",
            "--compact",
            "--skip-download",
            "--download-external-modules",
            "false",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert result.stdout.strip(), result.stderr
    report = json.loads(result.stdout)
    reports = report if isinstance(report, list) else [report]
    assert [r["check_type"] for r in reports] == ["terraform"]
    summary = reports[0]["summary"]
    failed = reports[0]["results"]["failed_checks"]
    assert summary["failed"] == 0, [(c["check_id"], c["resource"]) for c in failed]
    assert summary["parsing_errors"] == 0, summary
    assert summary["passed"] > 0
    assert result.returncode == 0, result.stderr
    scanned = {c["resource"].split(".")[1] for c in reports[0]["results"]["passed_checks"]}
    assert {"bigquery_sync", "snowflake_sync"} <= scanned  # both modules were loaded
    for check in reports[0]["results"]["skipped_checks"]:
        reason = check["check_result"].get("suppress_comment", "")
        assert len(reason.split()) >= 4, f"{check['check_id']} skipped without a reason"


@pytest.mark.parametrize(
    "path",
    sorted(p for p in TERRAFORM.rglob("*") if p.is_file()),
    ids=lambda p: str(p.relative_to(TERRAFORM)),
)
def test_every_checkov_skip_has_a_written_reason(path: Path) -> None:
    for match in SKIP_COMMENT.finditer(path.read_text(encoding="utf-8")):
        check, reason = match.group(1), (match.group(2) or "").strip()
        assert re.fullmatch(r"CKV2?_[A-Z0-9]+_\d+", check), match.group(0)
        assert len(reason.split()) >= 4 and reason.endswith("."), (
            f"{path}: {check} needs a written reason (a sentence)"
        )


# -- GCP least privilege ---------------------------------------------------------------------

IAM_RESOURCE = re.compile(r"^google_.+_iam_(member|binding|policy)$")


def gcp_grants(config: Config) -> list[dict[str, Any]]:
    """Every IAM grant of the module: resource type/name, role, members, condition."""
    grants = []
    for type_name, named in config.resources.items():
        if not IAM_RESOURCE.match(type_name):
            continue
        assert not type_name.endswith("_iam_policy"), f"{type_name} replaces whole policies"
        for name, body in named.items():
            members = as_list(body["member"]) if "member" in body else body["members"]
            condition = body.get("condition")
            grants.append(
                {
                    "type": type_name,
                    "name": name,
                    "body": body,
                    "role": body["role"],
                    "members": [config.resolve(m) for m in as_list(members)],
                    "condition": as_list(condition)[0]["expression"] if condition else None,
                }
            )
    return grants


def test_sync_service_account_has_exactly_the_expected_grants() -> None:
    config = module("bigquery_sync")
    custom_roles = config.resources["google_project_iam_custom_role"]
    assert set(custom_roles) == {"manifest_writer"}
    writer = custom_roles["manifest_writer"]
    assert set(writer["permissions"]) == MANIFEST_WRITER_PERMISSIONS
    writer_ref = "${google_project_iam_custom_role.manifest_writer.name}"

    sync = [
        g
        for g in gcp_grants(config)
        if any("google_service_account.sync." in m for m in g["members"])
    ]
    assert config.locals["sync_member"] == "serviceAccount:${google_service_account.sync.email}"
    for grant in sync:
        assert grant["body"]["member"] == "${local.sync_member}", grant["name"]
    found = {(g["type"], g["role"], g["condition"] is not None): g for g in sync}
    assert len(found) == len(sync), [(g["type"], g["role"]) for g in sync]
    assert set(found) == {
        ("google_storage_bucket_iam_member", "roles/storage.objectViewer", False),
        ("google_storage_bucket_iam_member", writer_ref, True),
        ("google_bigquery_dataset_iam_member", "roles/bigquery.dataEditor", False),
        ("google_project_iam_member", "roles/bigquery.jobUser", False),
        ("google_bigquery_connection_iam_member", "roles/bigquery.connectionUser", False),
    }

    # The writer role only under each table's manifest prefix, one binding per prefix.
    write = found[("google_storage_bucket_iam_member", writer_ref, True)]
    assert write["body"]["for_each"] == "${toset(var.table_prefixes)}"
    assert write["body"]["bucket"] == "${local.bucket}"
    expression = write["condition"]
    assert expression.startswith("resource.name.startsWith(")
    assert "projects/_/buckets/${local.bucket}/objects/${each.value}/.hoodie/manifest/" in (
        expression
    )
    assert "||" not in expression and "!" not in expression.replace("\\", "")

    read = found[("google_storage_bucket_iam_member", "roles/storage.objectViewer", False)]
    assert read["body"]["bucket"] == "${local.bucket}"
    dataset = found[("google_bigquery_dataset_iam_member", "roles/bigquery.dataEditor", False)]
    assert dataset["body"]["dataset_id"] == "${google_bigquery_dataset.sync.dataset_id}"
    connection = found[
        ("google_bigquery_connection_iam_member", "roles/bigquery.connectionUser", False)
    ]
    assert (
        connection["body"]["connection_id"]
        == "${google_bigquery_connection.biglake[0].connection_id}"
    )
    assert connection["body"]["count"] == "${var.create_biglake_connection ? 1 : 0}"
    assert config.locals["bucket"] == (
        "${var.create_bucket ? google_storage_bucket.tables[0].name : var.bucket_name}"
    )


def test_the_only_other_grant_is_the_connection_reading_the_bucket() -> None:
    config = module("bigquery_sync")
    others = [
        g
        for g in gcp_grants(config)
        if not any("google_service_account.sync." in m for m in g["members"])
    ]
    assert [(g["type"], g["role"], g["condition"]) for g in others] == [
        ("google_storage_bucket_iam_member", "roles/storage.objectViewer", None)
    ]
    (member,) = others[0]["members"]
    assert "google_bigquery_connection.biglake[0].cloud_resource[0].service_account_id" in member


def test_no_broad_gcp_roles_anywhere() -> None:
    for path in tf_files():
        for text in strings_in(parse(path)):
            for role in FORBIDDEN_GCP_ROLES:
                assert role not in text, f"{path}: {role}"
    for config in (module("bigquery_sync"), Config(EXAMPLES / "bigquery")):
        for grant in gcp_grants(config):
            if grant["type"].startswith("google_project_iam"):
                assert not grant["role"].startswith("roles/storage."), grant["role"]
                assert grant["role"] == "roles/bigquery.jobUser", grant["role"]


# -- AWS least privilege -------------------------------------------------------------------------


def statements(config: Config, document: str) -> list[dict[str, Any]]:
    """A policy document's statements, with those of its ``source_policy_documents``."""
    body = config.data["aws_iam_policy_document"][document]
    found: list[dict[str, Any]] = []
    for source in as_list(body.get("source_policy_documents", [])):
        reference = re.fullmatch(r"\$\{data\.aws_iam_policy_document\.(\w+)\.json\}", source)
        assert reference, f"{document}: source {source} is not a policy document of this module"
        found += statements(config, reference.group(1))
    found += body["statement"]
    for statement in found:
        assert statement.get("effect", "Allow") == "Allow"
        assert "not_actions" not in statement and "not_resources" not in statement
    return found


def resource_templates(config: Config, statement: dict[str, Any]) -> list[str]:
    """The ARNs of a statement: each a string as written (e.g. ``${local.bucket_arn}``) or,
    for a local that is a ``[for prefix in var.table_prefixes : "…"]`` list, that template."""
    templates = []
    for value in as_list(statement["resources"]):
        local = re.fullmatch(r"\$\{local\.([A-Za-z0-9_]+)\}", value)
        expression = config.locals[local.group(1)] if local else ""
        loop = re.fullmatch(r'\$\{\[for prefix in var\.table_prefixes : "(.*)"\]\}', expression)
        assert "for " not in expression or loop, f"unexpected list: {expression}"
        templates.append(loop.group(1) if loop else value)
    return templates


def check_reads(config: Config, document: str) -> None:
    bucket_arn = "${local.bucket_arn}"
    assert config.locals["bucket_arn"] == "arn:${local.partition}:s3:::${var.bucket_name}"
    for statement in statements(config, document):
        actions = set(statement["actions"])
        templates = resource_templates(config, statement)
        if actions & {"s3:GetObject", "s3:GetObjectVersion"}:
            assert actions == {"s3:GetObject", "s3:GetObjectVersion"}
            assert templates == [bucket_arn + "/${prefix}/*"]
        elif "s3:ListBucket" in actions:
            assert actions == {"s3:ListBucket"}
            assert templates == [bucket_arn]
            (condition,) = statement["condition"]
            assert condition == {
                "test": "StringLike",
                "variable": "s3:prefix",
                "values": "${local.list_prefixes}",
            }
            assert config.locals["list_prefixes"] == (
                '${[for prefix in var.table_prefixes : "${prefix}/*"]}'
            )
        elif "s3:GetBucketLocation" in actions:
            assert actions == {"s3:GetBucketLocation"}
            assert templates == [bucket_arn]


def test_snowflake_role_only_reads_the_table_prefixes() -> None:
    config = module("snowflake_sync")
    actions = {a for s in statements(config, "snowflake_read") for a in s["actions"]}
    assert actions == S3_READ
    check_reads(config, "snowflake_read")

    # That document is the role's only policy, and the role trusts only the integration.
    role = config.resources["aws_iam_role"]["snowflake"]
    assert "managed_policy_arns" not in role and "inline_policy" not in role
    assert "aws_iam_role_policy_attachment" not in config.resources
    assert "aws_iam_policy_attachment" not in config.resources
    assert config.resources["aws_iam_role_policy"] == {
        "snowflake_read": {
            "name": "hudi-sync-read-tables",
            "role": "${aws_iam_role.snowflake.id}",
            "policy": "${data.aws_iam_policy_document.snowflake_read.json}",
        },
        # The external volume's role (iceberg): the same read-only document, nothing else.
        "snowflake_iceberg_read": {
            "count": "${local.iceberg_count}",
            "name": "hudi-sync-read-tables",
            "role": "${aws_iam_role.snowflake_iceberg[0].id}",
            "policy": "${data.aws_iam_policy_document.snowflake_read.json}",
        },
    }
    assert role["assume_role_policy"] == "${data.aws_iam_policy_document.snowflake_trust.json}"
    (trust,) = statements(config, "snowflake_trust")
    assert trust["actions"] == ["sts:AssumeRole"]
    (principal,) = trust["principals"]
    assert principal == {
        "type": "AWS",
        "identifiers": ["${snowflake_storage_integration.s3.storage_aws_iam_user_arn}"],
    }
    (condition,) = trust["condition"]
    assert condition == {
        "test": "StringEquals",
        "variable": "sts:ExternalId",
        "values": ["${snowflake_storage_integration.s3.storage_aws_external_id}"],
    }


def test_sync_runner_writes_only_manifests() -> None:
    config = module("snowflake_sync")
    runner = statements(config, "sync_runner")
    actions = {a for s in runner for a in s["actions"]}
    assert actions == S3_READ | S3_MANIFEST_WRITE
    for statement in runner:
        writes = {a for a in statement["actions"] if not a.startswith(("s3:Get", "s3:List"))}
        if writes:
            assert writes == set(statement["actions"]) == S3_MANIFEST_WRITE
            for template in resource_templates(config, statement):
                assert template.endswith("/.hoodie/manifest/*"), template
                assert template == "${local.bucket_arn}/${prefix}/.hoodie/manifest/*"
    check_reads(config, "sync_runner")
    policy = config.resources["aws_iam_policy"]["sync_runner"]
    assert policy["policy"] == "${data.aws_iam_policy_document.sync_runner.json}"
    assert config.outputs["sync_runner_policy_json"]["value"] == (
        "${data.aws_iam_policy_document.sync_runner.json}"
    )


def test_no_s3_wildcards_or_other_services() -> None:
    config = module("snowflake_sync")
    for document in config.data["aws_iam_policy_document"]:
        for statement in statements(config, document):
            for action in statement["actions"]:
                assert "*" not in action, action
                assert action.startswith(("s3:", "sts:AssumeRole")), action


# -- Snowflake least privilege -------------------------------------------------------------------


def test_snowflake_sync_role_has_exactly_the_expected_privileges() -> None:
    config = module("snowflake_sync")
    grant_types = {t for t in config.resources if t.startswith("snowflake_grant")}
    assert grant_types == {
        "snowflake_grant_privileges_to_account_role",
        "snowflake_grant_account_role",
    }  # no snowflake_grant_ownership, no database-role or share grants
    role_ref = "${snowflake_account_role.sync.name}"
    granted: set[tuple[str, str]] = set()
    objects: dict[str, str] = {}
    iceberg: set[tuple[str, str, str]] = set()
    for name, grant in config.resources["snowflake_grant_privileges_to_account_role"].items():
        assert grant["account_role_name"] == role_ref, name
        assert not grant.get("all_privileges"), f"{name}: ALL PRIVILEGES"
        assert not grant.get("with_grant_option"), f"{name}: WITH GRANT OPTION"
        assert not grant.get("on_account"), f"{name}: account-level privileges"
        assert "on_schema_object" not in grant, name
        if "on_schema" in grant:
            (on,) = grant["on_schema"]
            assert set(on) == {"schema_name"}, f"{name}: all/future schemas"
            kind, target = "SCHEMA", on["schema_name"]
        else:
            (on,) = grant["on_account_object"]
            kind, target = on["object_type"], on["object_name"]
        privileges = grant["privileges"]
        assert len(set(privileges)) == len(privileges)
        if grant.get("count") == "${local.iceberg_count}":  # only when iceberg is on
            iceberg |= {(kind, target, privilege) for privilege in privileges}
            continue
        assert "count" not in grant, name
        assert kind not in objects, f"{kind} granted twice"
        objects[kind] = target
        granted |= {(kind, privilege) for privilege in privileges}
    assert granted == SNOWFLAKE_GRANTS
    assert iceberg == SNOWFLAKE_ICEBERG_GRANTS
    assert objects == {
        "DATABASE": "${local.database}",
        "SCHEMA": "${local.schema_fqn}",
        "INTEGRATION": "${snowflake_storage_integration.s3.name}",
        "WAREHOUSE": "${var.warehouse}",
    }
    for privilege in {p for _, p in granted} | {p for *_, p in iceberg}:
        assert privilege not in {"OWNERSHIP", "ALL", "ALL PRIVILEGES", "CREATE TABLE"}

    (to_user,) = config.resources["snowflake_grant_account_role"].values()
    assert to_user == {
        "count": "${var.sync_user == null ? 0 : 1}",
        "role_name": role_ref,
        "user_name": "${var.sync_user}",
    }


def test_snowflake_storage_integration_allows_only_the_table_prefixes() -> None:
    config = module("snowflake_sync")
    integration = config.resources["snowflake_storage_integration"]["s3"]
    assert integration["type"] == "EXTERNAL_STAGE"
    assert integration["storage_provider"] == "S3"
    assert integration["enabled"] is True
    assert integration["storage_aws_role_arn"] == "${local.snowflake_role_arn}"
    assert config.locals["snowflake_role_arn"] == (
        "arn:${local.partition}:iam::${data.aws_caller_identity.current.account_id}"
        ":role/${var.snowflake_iam_role_name}"
    )
    assert integration["storage_allowed_locations"] == (
        "${[for prefix in var.table_prefixes : local.stage_url[prefix]]}"
    )
    assert config.locals["stage_url"] == (
        '${{for prefix in var.table_prefixes : prefix => "s3://${var.bucket_name}/${prefix}/"}}'
    )
    assert "storage_blocked_locations" not in integration


# -- Iceberg (<t>_iceberg) ---------------------------------------------------------------------


def test_bigquery_iceberg_reads_through_the_existing_connection_only() -> None:
    """No new grant: the connection's service account already reads the bucket, and the
    sync's writer binding already covers <table>/.hoodie/manifest/iceberg/."""
    config = module("bigquery_sync")
    assert config.locals["iceberg_connection_id"] == (
        '${var.iceberg == "off" ? null : local.big_lake_connection_id}'
    )
    assert config.outputs["iceberg_connection_id"]["value"] == "${local.iceberg_connection_id}"
    (validation,) = config.variables["iceberg"]["validation"]
    assert validation["condition"] == '${contains(["off", "beside", "only"], var.iceberg)}'
    assert config.variables["iceberg"]["default"] == "off"
    ((precondition,),) = [
        block["precondition"]
        for block in config.resources["google_bigquery_dataset"]["sync"]["lifecycle"]
    ]
    assert precondition["condition"] == '${var.iceberg == "off" || var.create_biglake_connection}'
    options = config.locals["sync_options"]
    for entry in (
        '"hoodie.gcp.bigquery.sync.iceberg" = var.iceberg == "off" ? null : var.iceberg',
        '"hoodie.gcp.bigquery.sync.iceberg.connection" = local.iceberg_connection_id',
        # no table over base files with iceberg=only: the sync refuses the key there
        '"hoodie.gcp.bigquery.sync.big_lake_connection_id" = var.iceberg == "only" ? null '
        ": local.big_lake_connection_id",
    ):
        assert entry in options, entry
    assert options.endswith(" : key => value if value != null}}}")  # nulls left out


def test_snowflake_external_volume_is_read_only_and_trusts_only_the_volume() -> None:
    config = module("snowflake_sync")
    (volume,) = config.resources["snowflake_external_volume"].values()
    assert volume["count"] == "${local.iceberg_count}"
    assert volume["allow_writes"] == "false"
    (location,) = volume["storage_location"]
    assert location["storage_provider"] == "S3"
    assert location["storage_base_url"] == "${local.volume_url}"
    assert config.locals["volume_url"] == "s3://${var.bucket_name}/"
    assert location["storage_aws_role_arn"] == "${local.snowflake_iceberg_role_arn}"
    assert config.locals["snowflake_iceberg_role_arn"] == (
        "arn:${local.partition}:iam::${data.aws_caller_identity.current.account_id}"
        ":role/${var.snowflake_iceberg_iam_role_name}"
    )
    (catalog,) = config.resources["snowflake_catalog_integration_object_storage"].values()
    assert (catalog["table_format"], catalog["enabled"]) == ("ICEBERG", True)
    assert catalog["count"] == "${local.iceberg_count}"

    role = config.resources["aws_iam_role"]["snowflake_iceberg"]
    assert role["name"] == "${var.snowflake_iceberg_iam_role_name}"
    assert role["assume_role_policy"] == (
        "${data.aws_iam_policy_document.snowflake_iceberg_trust[0].json}"
    )
    assert "managed_policy_arns" not in role and "inline_policy" not in role
    (trust,) = statements(config, "snowflake_iceberg_trust")
    described = "${snowflake_external_volume.iceberg[0].describe_output[0].storage_locations[0]"
    assert trust["actions"] == ["sts:AssumeRole"]
    assert trust["principals"] == [
        {
            "type": "AWS",
            "identifiers": [f"{described}.s3_storage_location[0].storage_aws_iam_user_arn}}"],
        }
    ]
    assert trust["condition"] == [
        {
            "test": "StringEquals",
            "variable": "sts:ExternalId",
            "values": [f"{described}.s3_storage_location[0].storage_aws_external_id}}"],
        }
    ]
    options = config.locals["sync_options"]
    for entry in (
        '"hoodie.snowflake.sync.iceberg" = local.iceberg ? var.iceberg : null',
        '"hoodie.snowflake.sync.iceberg.external_volume" = '
        "local.iceberg ? snowflake_external_volume.iceberg[0].name : null",
        '"hoodie.snowflake.sync.iceberg.catalog_integration" = '
        "local.iceberg ? snowflake_catalog_integration_object_storage.iceberg[0].name : null",
        '"hoodie.snowflake.sync.iceberg.volume_url" = local.iceberg ? local.volume_url : null',
    ):
        assert entry in options, entry
    assert options.endswith(" : key => value if value != null}}}")  # nulls left out
    assert config.locals["iceberg"] == '${var.iceberg != "off"}'


def test_the_snowflake_example_enables_the_iceberg_previews() -> None:
    parsed = parse(EXAMPLES / "snowflake" / "main.tf")
    provider = next(b["snowflake"] for b in parsed["provider"] if "snowflake" in b)
    assert {
        "snowflake_external_volume_resource",
        "snowflake_catalog_integration_object_storage_resource",
    } <= set(provider["preview_features_enabled"])
