#!/bin/sh
# Run once by Patroni on the first primary: the service's role and database.
set -eu
psql "$1" -v ON_ERROR_STOP=1 -v pw="$KUI_PASSWORD" <<'SQL'
CREATE ROLE kui LOGIN PASSWORD :'pw';
CREATE DATABASE kui OWNER kui;
SQL
