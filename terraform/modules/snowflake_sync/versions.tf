terraform {
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
    # The provider moved from the Snowflake-Labs namespace to snowflakedb with v1.0.
    snowflake = {
      source  = "snowflakedb/snowflake"
      version = ">= 1.0, < 3.0"
    }
  }
}
