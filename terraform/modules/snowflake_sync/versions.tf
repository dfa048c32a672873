terraform {
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
    # The provider moved from the Snowflake-Labs namespace to snowflakedb with v1.0; the
    # object-store catalog integration and the external volume's typed describe_output (the
    # volume's IAM user and external id) are read as documented for 2.15.
    snowflake = {
      source  = "snowflakedb/snowflake"
      version = ">= 2.15, < 3.0"
    }
  }
}
