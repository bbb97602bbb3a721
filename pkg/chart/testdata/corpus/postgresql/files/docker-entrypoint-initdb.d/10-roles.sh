#!/bin/bash
set -o errexit
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" <<-EOSQL
  CREATE ROLE readonly NOLOGIN;
  GRANT USAGE ON SCHEMA orders TO readonly;
EOSQL
