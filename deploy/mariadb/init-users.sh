# Sourced once by the mariadb:10.11 image's entrypoint on an empty datadir (from /docker-entrypoint-initdb.d; not
# executable, so it is sourced and docker_process_sql, the entrypoint's root client, is at hand; no `set -u` here,
# it would apply to the entrypoint too):
# the users of scripts/mariadb_cluster.py, with the passwords of docker compose's secrets. With sql_log_bin=0, as
# there: none of it reaches a binlog, so every server starts without a GTID of its own.
#   ferry       Ferry's monitor/admin login (least privilege, as mariadb_cluster.py ADMIN_GRANTS; docs/security.md)
#   ferry_repl  the login replicas connect to their master with (REPLICATION SLAVE only)
#   app         the demo load writer's (everything on the app schema; BINLOG REPLAY to choose its GTID domain)
quote() { # an SQL string literal
  local value=${1//\\/\\\\}
  printf "'%s'" "${value//\'/\\\'}"
}
ferry_password=$(quote "$(cat /run/secrets/mariadb_ferry_password)")
replication_password=$(quote "$(cat /run/secrets/mariadb_replication_password)")
app_password=$(quote "$(cat /run/secrets/mariadb_app_password)")

docker_process_sql --database=mysql <<SQL
SET SESSION sql_log_bin = 0;
CREATE USER 'ferry'@'%' IDENTIFIED BY $ferry_password;
GRANT BINLOG MONITOR, SLAVE MONITOR, REPLICATION MASTER ADMIN, PROCESS, READ_ONLY ADMIN, REPLICATION SLAVE ADMIN,
  BINLOG ADMIN, CONNECTION ADMIN, RELOAD, SELECT, BINLOG REPLAY ON *.* TO 'ferry'@'%';
CREATE DATABASE ferry;
GRANT INSERT, CREATE ON ferry.* TO 'ferry'@'%';
CREATE USER 'ferry_repl'@'%' IDENTIFIED BY $replication_password;
GRANT REPLICATION SLAVE ON *.* TO 'ferry_repl'@'%';
CREATE DATABASE app;
CREATE USER 'app'@'%' IDENTIFIED BY $app_password;
GRANT ALL ON app.* TO 'app'@'%';
GRANT BINLOG REPLAY ON *.* TO 'app'@'%';
SET SESSION sql_log_bin = 1;
SQL
