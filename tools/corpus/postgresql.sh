#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# PostgreSQL 15 (Debian package postgresql-15): a fresh cluster on loopback.
# Traffic: DDL, inserts/updates, pgbench runs, checkpoints, vacuum.
# Faults: syntax errors, constraint violations, division by zero, unknown
# tables/databases/roles, wrong passwords, a lock timeout, a deadlock,
# statement timeouts, a killed backend, fast shutdown.
. "$(dirname "$0")/common.sh"
ensure_pkg postgresql-15 postgresql-client-15
B=/usr/lib/postgresql/15/bin
chown postgres "$WORK"
as_pg() { runuser -u postgres -- "$@"; }
echo pgadminpw > "$WORK/pw"; chown postgres "$WORK/pw"
as_pg $B/initdb -D "$WORK/data" -A scram-sha-256 --pwfile="$WORK/pw" -U postgres >/dev/null
cat >> "$WORK/data/postgresql.conf" <<CFG
listen_addresses = '127.0.0.1'
port = 15432
unix_socket_directories = '$WORK'
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
log_connections = on
log_disconnections = on
log_checkpoints = on
log_lock_waits = on
deadlock_timeout = 200ms
log_min_duration_statement = 300
log_autovacuum_min_duration = 0
autovacuum_naptime = 5s
checkpoint_timeout = 30s
log_temp_files = 0
work_mem = 64kB
CFG
as_pg $B/pg_ctl -D "$WORK/data" -l "$WORK/postgresql.log" -w start >/dev/null
export PGHOST=127.0.0.1 PGPORT=15432 PGUSER=postgres PGPASSWORD=pgadminpw
q() { psql -X -q -d "${DB:-postgres}" -c "$1" >/dev/null 2>&1 || true; }
say "traffic"
q "CREATE ROLE app LOGIN PASSWORD 'apppw'"
q "CREATE DATABASE shop OWNER app"
DB=shop PGUSER=app PGPASSWORD=apppw
export DB
q "CREATE TABLE customers(id serial primary key, email text unique not null, created timestamptz default now())"
q "CREATE TABLE orders(id serial primary key, customer int references customers(id), total numeric check (total >= 0))"
for i in $(seq 1 60); do
    q "INSERT INTO customers(email) VALUES ('user$i@example.org')"
    q "INSERT INTO orders(customer,total) VALUES ($i, $i * 3.5)"
    case $((i % 6)) in
        0) q "INSERT INTO customers(email) VALUES ('user1@example.org')" ;;
        1) q "INSERT INTO orders(customer,total) VALUES (99999, 1)" ;;
        2) q "SELEC * FROM orders" ;;
        3) q "SELECT total / 0 FROM orders LIMIT 1" ;;
        4) q "SELECT * FROM invoices" ;;
        5) q "INSERT INTO orders(customer,total) VALUES (1, -5)" ;;
    esac
done
q "SELECT pg_sleep(0.5)"
q "SET statement_timeout = '200ms'; SELECT pg_sleep(1)"
q "SELECT count(*) FROM generate_series(1,200000) g ORDER BY 1"
q "SELECT * FROM generate_series(1,100000) g ORDER BY g DESC LIMIT 1"
# wrong passwords, unknown role and database
for u in app admin root; do PGUSER=$u PGPASSWORD=wrong psql -X -d shop -c 'select 1' >/dev/null 2>&1 || true; done
PGUSER=app PGPASSWORD=apppw psql -X -d nosuchdb -c 'select 1' >/dev/null 2>&1 || true
# lock wait then timeout, and a deadlock
q "CREATE TABLE acct(id int primary key, bal int)"
q "INSERT INTO acct VALUES (1,100),(2,100)"
psql -X -d shop -c "BEGIN; UPDATE acct SET bal=bal-1 WHERE id=1; SELECT pg_sleep(1); UPDATE acct SET bal=bal+1 WHERE id=2; COMMIT" >/dev/null 2>&1 &
P1=$!
psql -X -d shop -c "BEGIN; UPDATE acct SET bal=bal-1 WHERE id=2; SELECT pg_sleep(1); UPDATE acct SET bal=bal+1 WHERE id=1; COMMIT" >/dev/null 2>&1 &
P2=$!
wait $P1 || true; wait $P2 || true
psql -X -d shop -c "BEGIN; LOCK TABLE acct; SELECT pg_sleep(1.5); COMMIT" >/dev/null 2>&1 &
P1=$!
sleep 0.3; q "SET lock_timeout='500ms'; UPDATE acct SET bal=0 WHERE id=1"
wait $P1 || true
# pgbench load
PGUSER=postgres PGPASSWORD=pgadminpw pgbench -q -i -s 2 shop >/dev/null 2>&1 || true
PGUSER=postgres PGPASSWORD=pgadminpw pgbench -c 4 -j 2 -T 8 shop >/dev/null 2>&1 || true
PGUSER=postgres PGPASSWORD=pgadminpw pgbench -c 2 -t 40 -C shop >/dev/null 2>&1 || true
PGUSER=postgres PGPASSWORD=pgadminpw psql -X -d shop -c "CHECKPOINT" -c "VACUUM ANALYZE" >/dev/null 2>&1 || true
# a backend killed from outside
psql -X -d shop -c "SELECT pg_sleep(5)" >/dev/null 2>&1 &
P1=$!
sleep 1; PGUSER=postgres PGPASSWORD=pgadminpw psql -X -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(5)%'" >/dev/null 2>&1 || true
wait $P1 || true
as_pg $B/pg_ctl -D "$WORK/data" -m fast -w stop >/dev/null
emit postgresql "$WORK/postgresql.log"
