#!/bin/sh
set -eu
pg_dump "$DATABASE_URL" > /backup/dump.sql
