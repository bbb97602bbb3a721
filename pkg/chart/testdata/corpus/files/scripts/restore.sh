#!/bin/sh
psql "$DATABASE_URL" < /backup/dump.sql
