#!/bin/bash
# docker compose's `mariadb-wire` (profile mariadb), once: when no server replicates yet, mariadb2 and mariadb3
# become read-only replicas of mariadb1 over GTID (slave_pos) with the replication login, as scripts/mariadb_cluster.py
# wires its star; once any server has a replication connection the topology is left as it is (a switchover may have
# changed it since). Safe to repeat.
set -euo pipefail
root_password=$(cat /run/secrets/mariadb_root_password)
replication_password=$(cat /run/secrets/mariadb_replication_password)
sql() { # sql HOST STATEMENTS
  mariadb --host="$1" --user=root --password="$root_password" --batch --skip-column-names --connect-timeout=5 -e "$2"
}
for host in mariadb1 mariadb2 mariadb3; do
  for _ in $(seq 1 60); do sql "$host" "SELECT 1" > /dev/null 2>&1 && break; sleep 1; done
  sql "$host" "SELECT 1" > /dev/null
done
for host in mariadb1 mariadb2 mariadb3; do
  if [ -n "$(sql "$host" "SHOW ALL SLAVES STATUS")" ]; then
    echo "$host replicates already: the topology is kept as it is"
    exit 0
  fi
done
quoted=${replication_password//\\/\\\\}
quoted=${quoted//\'/\\\'}
for host in mariadb2 mariadb3; do
  sql "$host" "SET GLOBAL read_only = 1;
    CHANGE MASTER '' TO MASTER_HOST='mariadb1', MASTER_PORT=3306, MASTER_USER='ferry_repl',
      MASTER_PASSWORD='$quoted', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
    START SLAVE '';"
  echo "$host: read-only, replicating from mariadb1"
done
