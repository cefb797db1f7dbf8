#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# MariaDB 10.11 (Debian packages mariadb-server and mariadb-client): a private
# mariadbd on loopback with its own datadir, binary log and event scheduler,
# logging three files, emitted one after the other as one log: the error log
# (log_warnings=4, all deadlocks printed), then the slow query log (over
# 0.1 s, admin statements too, with query plans and EXPLAIN), then the
# general query log. Clients are mariadb, mariadb-admin, mariadb-dump,
# mariadb-check and a Perl DBD::MariaDB program (libdbd-mariadb-perl) using
# server-side prepared statements.
# HELD OUT (third set): never trained on (collect.sh --held-out-3).
# Traffic: schema set-up (InnoDB, MyISAM, Aria and MEMORY tables, a view,
# triggers, a stored procedure, events), LOAD DATA LOCAL, a shop application
# doing sign-ups, logins, browsing, orders in transactions, payments and
# cancellations, a blog with full-text search, reports scanning a click
# stream table, prepared statements, user and grant management, online ALTER
# TABLE and index builds, backups with mariadb-dump, ANALYZE, OPTIMIZE,
# CHECK, FLUSH, binary log rotation and purge, monitoring with mariadb-admin,
# the event scheduler. Faults: wrong passwords, unknown users and databases,
# a scanner trying common accounts, access denied on databases, tables and
# commands, syntax errors, unknown columns and tables, duplicate keys,
# foreign key and check constraint failures, out-of-stock (out of range)
# updates, deadlocks between two clients, lock wait timeouts, too many
# connections, a user over its connection limit, an expired password, a
# locked account, idle clients timed out, clients killed midway, garbage and
# silent clients on the port, a full MEMORY table, writes to a read-only
# server, KILL of queries and connections, an event whose table was dropped,
# a crash (kill -9) under load with InnoDB, binary log, Aria and MyISAM
# recovery, a clean shutdown, a start with a typo in the configuration, a
# second server on the same port, a restart.
. "$(dirname "$0")/common.sh"
ensure_pkg mariadb-server mariadb-client libdbd-mariadb-perl netcat-openbsd
P=18306
D=$WORK/data
L=$WORK/log
S=$WORK/run/mariadbd.sock
RANDOM=18306
mkdir -p "$D" "$L" "$WORK/run" "$WORK/files"
chown mysql:mysql "$D" "$L" "$WORK/run"

write_cnf() {
    cat > "$WORK/my.cnf" <<CFG
# my.cnf for the txl corpus (loopback only)
[mariadbd]
user                    = mysql
datadir                 = $D
port                    = $P
bind-address            = 127.0.0.1
socket                  = $S
pid-file                = $WORK/run/mariadbd.pid
skip-name-resolve
log-error               = $L/error.log
log_warnings            = 4
general_log             = ON
general_log_file        = $L/general.log
slow_query_log          = ON
slow_query_log_file     = $L/slow.log
long_query_time         = 0.1
log_slow_admin_statements = ON
log_slow_verbosity      = query_plan,explain
log_bin                 = $D/mariadb-bin
server_id               = 1
binlog_format           = MIXED
max_binlog_size         = 256K
max_connections         = 16
max_connect_errors      = 8
connect_timeout         = 3
max_heap_table_size     = 64K
innodb_buffer_pool_size = 32M
innodb_log_file_size    = 24M
innodb_lock_wait_timeout = 3
innodb_print_all_deadlocks = ON
myisam_recover_options  = BACKUP,FORCE
event_scheduler         = ON
local_infile            = ON
secure_file_priv        = $WORK/files
character-set-server    = utf8mb4
collation-server        = utf8mb4_general_ci
$1
CFG
}
write_cnf ""
mariadb-install-db --defaults-file="$WORK/my.cnf" --auth-root-authentication-method=socket \
    --skip-test-db >/dev/null 2>&1
start_db() {
    bg /usr/sbin/mariadbd --defaults-file="$WORK/my.cnf" >/dev/null 2>&1
    MPID=$LASTPID
    wait_port $P 40
    i=0; while [ ! -S "$S" ] && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
    sleep 1
}
# forget a server that is gone, so cleanup kills no stranger with its pid
forget() { PIDS=${PIDS/ $MPID/}; }
stop_db() {
    mariadb-admin --no-defaults -S "$S" -uroot shutdown >/dev/null 2>&1 || kill "$MPID" 2>/dev/null || true
    wait "$MPID" 2>/dev/null || true
    forget
}
start_db
say "traffic"

# --- clients ---------------------------------------------------------------
# root: the DBA at the console (unix socket); others over TCP
root() { mariadb --no-defaults -S "$S" -uroot -f "$@" >/dev/null 2>&1 || true; }
tcp() {  # tcp USER PASS [DB] [options]: SQL on stdin
    u=$1; pw=$2; shift 2
    timeout 30 mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P$P -u"$u" --password="$pw" -f "$@" >/dev/null 2>&1 || true
}
app() { tcp app apppw shop "$@"; }
adm() { timeout 30 mariadb-admin --no-defaults --protocol=tcp -h127.0.0.1 -P$P "$@" >/dev/null 2>&1 || true; }

root <<'SQL'
CREATE DATABASE shop;
CREATE DATABASE blog;
CREATE USER 'app'@'%' IDENTIFIED BY 'apppw';
GRANT SELECT, INSERT, UPDATE, DELETE, EXECUTE ON shop.* TO 'app'@'%';
CREATE USER 'blog'@'%' IDENTIFIED BY 'blogpw';
GRANT ALL ON blog.* TO 'blog'@'%';
CREATE USER 'report'@'%' IDENTIFIED BY 'reportpw' WITH MAX_USER_CONNECTIONS 2;
GRANT SELECT ON shop.* TO 'report'@'%';
GRANT SELECT ON blog.posts TO 'report'@'%';
CREATE USER 'backup'@'localhost' IDENTIFIED BY 'backuppw';
GRANT SELECT, LOCK TABLES, SHOW VIEW, EVENT, TRIGGER, RELOAD, PROCESS, BINLOG MONITOR ON *.* TO 'backup'@'localhost';
CREATE USER 'admin'@'127.0.0.1' IDENTIFIED BY 'adminpw';
GRANT ALL PRIVILEGES ON *.* TO 'admin'@'127.0.0.1' WITH GRANT OPTION;
CREATE USER 'monitor'@'127.0.0.1' IDENTIFIED BY 'monitorpw';
GRANT PROCESS, REPLICA MONITOR, CONNECTION ADMIN ON *.* TO 'monitor'@'127.0.0.1';
CREATE USER 'shopapi'@'127.0.0.1' IDENTIFIED BY 'apipw';
GRANT SELECT, INSERT, UPDATE ON shop.* TO 'shopapi'@'127.0.0.1';
SQL

root shop <<'SQL'
CREATE TABLE customers (
  id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  email VARCHAR(80) NOT NULL UNIQUE,
  name VARCHAR(60) NOT NULL,
  city VARCHAR(40),
  status ENUM('active','disabled') NOT NULL DEFAULT 'active',
  created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
) ENGINE=InnoDB;
CREATE TABLE products (
  id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  sku VARCHAR(20) NOT NULL UNIQUE,
  title VARCHAR(100) NOT NULL,
  price DECIMAL(8,2) NOT NULL CHECK (price > 0),
  stock INT UNSIGNED NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE TABLE orders (
  id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  status ENUM('new','paid','shipped','cancelled') NOT NULL DEFAULT 'new',
  total DECIMAL(10,2) NOT NULL DEFAULT 0,
  created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  KEY (status),
  CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
) ENGINE=InnoDB;
CREATE TABLE order_items (
  order_id INT UNSIGNED NOT NULL,
  product_id INT UNSIGNED NOT NULL,
  qty SMALLINT UNSIGNED NOT NULL,
  price DECIMAL(8,2) NOT NULL,
  PRIMARY KEY (order_id, product_id),
  CONSTRAINT fk_items_order FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE,
  CONSTRAINT fk_items_product FOREIGN KEY (product_id) REFERENCES products (id)
) ENGINE=InnoDB;
CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(40), balance INT NOT NULL) ENGINE=InnoDB;
CREATE TABLE audit_log (
  id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  who VARCHAR(80),
  action VARCHAR(200)
) ENGINE=MyISAM;
CREATE TABLE sessions (
  sid CHAR(32) NOT NULL PRIMARY KEY,
  customer_id INT UNSIGNED,
  data VARCHAR(200),
  seen TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
) ENGINE=MEMORY;
CREATE TABLE page_hits (
  day DATE NOT NULL, path VARCHAR(60) NOT NULL, hits INT NOT NULL DEFAULT 0,
  PRIMARY KEY (day, path)
) ENGINE=Aria;
CREATE TABLE orders_archive LIKE orders;
CREATE TABLE clicks (
  id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  ts DATETIME NOT NULL,
  customer_id INT UNSIGNED,
  kind ENUM('view','search','cart','checkout','login') NOT NULL,
  path VARCHAR(60) NOT NULL,
  ms SMALLINT UNSIGNED NOT NULL
) ENGINE=InnoDB;
INSERT INTO clicks (ts, customer_id, kind, path, ms)
  SELECT NOW() - INTERVAL seq * 7 SECOND, seq * 13 % 250 + 1, seq * 7 % 5 + 1,
         CONCAT('/product/', seq * 31 % 120 + 1), seq * 17 % 900 + 20
  FROM seq_1_to_300000;
CREATE VIEW v_order_totals AS
  SELECT c.id AS customer_id, c.email, COUNT(o.id) AS orders, COALESCE(SUM(o.total),0) AS spent
  FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id, c.email;
CREATE TRIGGER trg_orders_ai AFTER INSERT ON orders FOR EACH ROW
  INSERT INTO audit_log (who, action) VALUES (CURRENT_USER(), CONCAT('order ', NEW.id, ' for customer ', NEW.customer_id));
CREATE TRIGGER trg_orders_au AFTER UPDATE ON orders FOR EACH ROW
  INSERT INTO audit_log (who, action) VALUES (CURRENT_USER(), CONCAT('order ', NEW.id, ' ', OLD.status, ' -> ', NEW.status));
DELIMITER //
CREATE PROCEDURE place_order(IN cust INT UNSIGNED, IN prod INT UNSIGNED, IN n SMALLINT UNSIGNED)
BEGIN
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  INSERT INTO orders (customer_id) VALUES (cust);
  SET @oid = LAST_INSERT_ID();
  INSERT INTO order_items SELECT @oid, id, n, price FROM products WHERE id = prod;
  UPDATE products SET stock = stock - n WHERE id = prod;
  UPDATE orders SET total = (SELECT SUM(qty * price) FROM order_items WHERE order_id = @oid) WHERE id = @oid;
  COMMIT;
END//
DELIMITER ;
CREATE EVENT ev_expire_sessions ON SCHEDULE EVERY 10 SECOND
  DO DELETE FROM sessions WHERE seen < NOW() - INTERVAL 20 SECOND;
CREATE EVENT ev_count_hits ON SCHEDULE EVERY 15 SECOND
  DO INSERT INTO page_hits (day, path, hits) VALUES (CURDATE(), '/event', 1) ON DUPLICATE KEY UPDATE hits = hits + 1;
CREATE EVENT ev_archive_orders ON SCHEDULE EVERY 20 SECOND
  DO INSERT INTO orders_archive SELECT * FROM orders WHERE status = 'cancelled' AND id NOT IN (SELECT id FROM orders_archive);
SQL

root blog <<'SQL'
CREATE TABLE posts (
  id INT AUTO_INCREMENT PRIMARY KEY, author VARCHAR(40) NOT NULL, title VARCHAR(120) NOT NULL,
  body TEXT, published DATETIME DEFAULT CURRENT_TIMESTAMP, views INT NOT NULL DEFAULT 0,
  FULLTEXT KEY ft_posts (title, body)
) ENGINE=InnoDB;
CREATE TABLE comments (
  id INT AUTO_INCREMENT PRIMARY KEY, post_id INT NOT NULL, author VARCHAR(40), body VARCHAR(500),
  created DATETIME DEFAULT CURRENT_TIMESTAMP, KEY (post_id)
) ENGINE=InnoDB;
SQL

# --- seed data: LOAD DATA LOCAL from CSV files ------------------------------
CITIES=(Berlin Paris Lyon Madrid Porto Oslo Vienna Prague Leeds Turin Ghent Basel Cork Riga)
FIRST=(Anna Ben Clara David Eva Felix Greta Hugo Ines Jonas Karin Luca Mia Noah Olga Paul Rosa Sven)
LAST=(Meyer Dubois Rossi Garcia Silva Novak Berg Smith Jensen Costa Weber Moreau Kowalski Fischer)
: > "$WORK/files/customers.csv"
for i in $(seq 1 260); do
    f=${FIRST[$((RANDOM % ${#FIRST[@]}))]}; l=${LAST[$((RANDOM % ${#LAST[@]}))]}
    c=${CITIES[$((RANDOM % ${#CITIES[@]}))]}
    e=$f.$l$((RANDOM % 90)); e=${e,,}
    printf '%s@example.org,%s %s,%s\n' "$e" "$f" "$l" "$c" >> "$WORK/files/customers.csv"
done
printf 'broken line without commas\n,,\n' >> "$WORK/files/customers.csv"
WORDS=(steel lamp desk chair cable mouse kettle mug shelf lamp fan clock bag pen notebook charger
       speaker blanket pillow towel knife pan plate bottle jacket scarf glove sock hat umbrella)
: > "$WORK/files/products.csv"
for i in $(seq 1 120); do
    printf 'SKU-%05d\t%s %s %s\t%d.%02d\t%d\n' $((i * 7)) "${WORDS[$((RANDOM % 30))]}" \
        "${WORDS[$((RANDOM % 30))]}" "model $((RANDOM % 9))" $((RANDOM % 200 + 1)) $((RANDOM % 100)) \
        $((RANDOM % 40)) >> "$WORK/files/products.csv"
done
printf 'SKU-00007\tduplicate row\t9.99\t5\nSKU-99999\tfree sample\t0.00\t10\n' >> "$WORK/files/products.csv"
chmod 644 "$WORK"/files/*.csv
app --local-infile=1 <<SQL
LOAD DATA LOCAL INFILE '$WORK/files/customers.csv' IGNORE INTO TABLE customers
  FIELDS TERMINATED BY ',' (email, name, city);
SHOW WARNINGS;
SQL
tcp admin adminpw shop --local-infile=1 <<SQL
LOAD DATA LOCAL INFILE '$WORK/files/products.csv' INTO TABLE products (sku, title, price, stock);
LOAD DATA LOCAL INFILE '$WORK/files/products.csv' IGNORE INTO TABLE products (sku, title, price, stock);
LOAD DATA INFILE '/etc/passwd' INTO TABLE products;
LOAD DATA LOCAL INFILE '$WORK/files/missing.csv' INTO TABLE products;
INSERT INTO accounts VALUES (1,'alice',1000),(2,'bob',1000),(3,'carol',500),(4,'dave',250);
ANALYZE TABLE customers, products;
SQL
NCUST=250
NPROD=120

# --- the shop application: one short connection per request ------------------
SEARCH=("lamp" "steel desk" "charger" "blue scarf" "kettle" "umbrella" "pen" "nothing here")
request() {
    c=$((RANDOM % NCUST + 1)); p=$((RANDOM % NPROD + 1)); q=$((RANDOM % 4 + 1))
    # (RANDOM only in this shell: subshells reseed it)
    if [ $((RANDOM % 3)) = 0 ]; then endtx=ROLLBACK; else endtx=COMMIT; fi
    bug=$((RANDOM % 12)); sfx=$((RANDOM % 90))
    f=${FIRST[$((RANDOM % ${#FIRST[@]}))]}; l=${LAST[$((RANDOM % ${#LAST[@]}))]}
    e=$f.$l$sfx; e=${e,,}
    case $((RANDOM % 26)) in
        0|1|2) app <<SQL
SELECT id, sku, title, price FROM products WHERE price BETWEEN $((RANDOM % 50)) AND $((RANDOM % 150 + 50)) ORDER BY price LIMIT 10;
SELECT id, title, price, stock FROM products WHERE id = $p;
SQL
        ;;
        3|4) app <<SQL
SELECT id, name, status FROM customers WHERE id = $c;
INSERT INTO sessions (sid, customer_id, data) VALUES (MD5('s$c-$RANDOM'), $c, 'cart=$p:$q') ON DUPLICATE KEY UPDATE seen = NOW();
SQL
        ;;
        5|6|7) app <<SQL
START TRANSACTION;
INSERT INTO orders (customer_id) VALUES ($c);
SET @oid = LAST_INSERT_ID();
INSERT INTO order_items SELECT @oid, id, $q, price FROM products WHERE id = $p;
UPDATE products SET stock = stock - $q WHERE id = $p;
UPDATE orders SET total = (SELECT SUM(qty * price) FROM order_items WHERE order_id = @oid) WHERE id = @oid;
COMMIT;
SQL
        ;;
        8) app <<SQL
CALL place_order($c, $p, $q);
SQL
        ;;
        9|10) app <<SQL
SELECT id, status, total FROM orders WHERE customer_id = $c ORDER BY id DESC LIMIT 5;
UPDATE orders SET status = 'paid' WHERE customer_id = $c AND status = 'new' LIMIT 1;
SQL
        ;;
        11) app <<SQL
UPDATE orders SET status = 'shipped' WHERE status = 'paid' ORDER BY id LIMIT 3;
SQL
        ;;
        12) app <<SQL
START TRANSACTION;
SELECT id, status FROM orders WHERE customer_id = $c AND status IN ('new','paid') ORDER BY id LIMIT 1 FOR UPDATE;
UPDATE orders SET status = 'cancelled' WHERE customer_id = $c AND status IN ('new','paid') ORDER BY id LIMIT 1;
UPDATE products SET stock = stock + $q WHERE id = $p;
$endtx;
SQL
        ;;
        13) app <<SQL
INSERT INTO customers (email, name, city) VALUES ('$e@example.org', '$f $l', '${CITIES[$((RANDOM % 14))]}');
SQL
        ;;
        14) app <<SQL
UPDATE customers SET city = '${CITIES[$((RANDOM % 14))]}' WHERE id = $c;
SQL
        ;;
        15) # application bugs
            case $bug in
                0) echo "SELEC id FROM products WHERE id = $p;" ;;
                1) echo "SELECT id, name, mobile FROM customers WHERE id = $c;" ;;
                2) echo "SELECT * FROM invoices WHERE customer_id = $c;" ;;
                3) echo "INSERT INTO orders (customer_id) VALUES ($((c + 90000)));" ;;
                4) echo "INSERT INTO customers (email, name) VALUES ('x$c@example.org', '$(printf 'N%.0s' $(seq 1 70))');" ;;
                5) echo "SELECT id FROM customers WHERE email = (SELECT email FROM customers WHERE city = 'Berlin');" ;;
                6) echo "UPDATE products SET price = -1 WHERE id = $p;" ;;
                7) echo "DELETE FROM customers WHERE id = $c;" ;;
                8) echo "INSERT INTO order_items VALUES (1, $p, 1, 1.00);" ;;
                9) echo "SELECT id, total FROM orders WHERE customer_id = '$c'' OR 1=1 -- ';" ;;
                10) echo "DROP TABLE orders;" ;;
                *) echo "SELECT COUNT(*) FROM orders WHERE created > '2026-13-45';" ;;
            esac | app
        ;;
        16|17) tcp blog blogpw blog <<SQL
SELECT id, title, author FROM posts ORDER BY published DESC LIMIT 10;
UPDATE posts SET views = views + 1 WHERE id = $((RANDOM % 40 + 1));
SELECT id, author, body FROM comments WHERE post_id = $((RANDOM % 40 + 1)) ORDER BY id;
SQL
        ;;
        18) tcp blog blogpw blog <<SQL
SELECT id, title, MATCH(title, body) AGAINST ('${SEARCH[$((RANDOM % 8))]}') AS score FROM posts WHERE MATCH(title, body) AGAINST ('${SEARCH[$((RANDOM % 8))]}') ORDER BY score DESC LIMIT 5;
INSERT INTO comments (post_id, author, body) VALUES ($((RANDOM % 40 + 1)), '${FIRST[$((RANDOM % 18))]}', 'Thanks, comment $RANDOM');
SQL
        ;;
        19) tcp blog blogpw blog <<SQL
INSERT INTO posts (author, title, body) VALUES ('${FIRST[$((RANDOM % 18))]}', 'Notes on ${WORDS[$((RANDOM % 30))]} $RANDOM', 'A post about the ${WORDS[$((RANDOM % 30))]} and the ${WORDS[$((RANDOM % 30))]}, with a lamp and a kettle.');
SQL
        ;;
        20) tcp report reportpw shop <<SQL
SELECT c.city, COUNT(*) AS orders, SUM(o.total) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY revenue DESC;
SELECT * FROM v_order_totals ORDER BY spent DESC LIMIT 10;
SQL
        ;;
        21) tcp report reportpw shop <<SQL
SELECT p.sku, p.title, SUM(i.qty) AS sold FROM order_items i JOIN products p ON p.id = i.product_id GROUP BY p.id ORDER BY sold DESC LIMIT 10;
SELECT status, COUNT(*), AVG(total) FROM orders GROUP BY status;
SQL
        ;;
        22) # reports over the click stream: full scans, the slow ones
            case $((bug % 5)) in
                0) echo "SELECT kind, COUNT(*) AS n, AVG(ms) AS avg_ms FROM clicks WHERE ts > NOW() - INTERVAL $((q * 3)) DAY GROUP BY kind;" ;;
                1) echo "SELECT path, COUNT(*) AS n FROM clicks GROUP BY path ORDER BY n DESC LIMIT 10;" ;;
                2) echo "SELECT customer_id, MAX(ts) AS last_seen FROM clicks WHERE kind = 'checkout' GROUP BY customer_id ORDER BY last_seen DESC LIMIT 20;" ;;
                3) echo "SELECT DATE(ts) AS day, COUNT(DISTINCT customer_id) AS visitors FROM clicks GROUP BY day ORDER BY day DESC LIMIT 30;" ;;
                *) echo "SELECT d.seq AS days_ago, COUNT(o.id) AS orders, COALESCE(SUM(o.total), 0) AS revenue FROM seq_0_to_$((q * 90 + 89)) d LEFT JOIN orders o ON DATE(o.created) = CURDATE() - INTERVAL d.seq DAY GROUP BY d.seq ORDER BY d.seq;" ;;
            esac > "$WORK/report.sql"
            tcp report reportpw shop < "$WORK/report.sql"
        ;;
        23) tcp report reportpw shop <<SQL
UPDATE orders SET status = 'shipped' WHERE id = $c;
SELECT * FROM mysql.user;
SQL
        ;;
        *) app <<SQL
INSERT INTO page_hits (day, path, hits) VALUES (CURDATE(), '/product/$p', 1) ON DUPLICATE KEY UPDATE hits = hits + 1;
INSERT INTO clicks (ts, customer_id, kind, path, ms) VALUES (NOW(), $c, 'view', '/product/$p', $((q * 37 + sfx)));
SQL
        ;;
    esac
}
round() { for _ in $(seq 1 "${1:-40}"); do request; done; }

# blog content
: > "$WORK/posts.sql"
for i in $(seq 1 40); do
    echo "INSERT INTO posts (author, title, body) VALUES ('${FIRST[$((RANDOM % 18))]}', 'How to choose a ${WORDS[$((RANDOM % 30))]}', 'Long text about the ${WORDS[$((RANDOM % 30))]}, the ${WORDS[$((RANDOM % 30))]} and the ${WORDS[$((RANDOM % 30))]}.');" >> "$WORK/posts.sql"
done
tcp blog blogpw blog < "$WORK/posts.sql"

# prepared statements over the binary protocol (an API service)
api() {
    timeout 60 perl -MDBI -e '
        my ($port, $n, $seed) = @ARGV; srand($seed);
        my $db = DBI->connect("DBI:MariaDB:database=shop;host=127.0.0.1;port=$port;mariadb_server_prepare=1",
                              "shopapi", "apipw", { RaiseError => 0, PrintError => 0, AutoCommit => 1 }) or exit 1;
        my $get = $db->prepare("SELECT id, title, price, stock FROM products WHERE id = ?");
        my $cust = $db->prepare("SELECT id, email, city FROM customers WHERE email LIKE ? LIMIT 3");
        my $hit = $db->prepare("INSERT INTO page_hits (day, path, hits) VALUES (CURDATE(), ?, 1) ON DUPLICATE KEY UPDATE hits = hits + 1");
        my $bad = $db->prepare("UPDATE products SET stock = ? WHERE id = ?");
        for my $i (1 .. $n) {
            my $r = int(rand(10));
            if ($r < 5) { $get->execute(1 + int(rand(130))); $get->fetchall_arrayref; }
            elsif ($r < 7) { $cust->execute(("a".."p")[int(rand(16))] . "%"); $cust->fetchall_arrayref; }
            elsif ($r < 9) { $hit->execute("/api/item/" . int(rand(50))); }
            else { $bad->execute(-5, 1 + int(rand(120))); }
        }
        $db->prepare("SELECT nosuchcolumn FROM products WHERE id = ?");
        $db->disconnect;' "$P" "$1" "$2" >/dev/null 2>&1 || true
}

# --- faults ------------------------------------------------------------------
# a scanner trying common accounts, plus mistyped passwords of real users
scanner() {
    for u in root admin mysql test sa wordpress backup dbuser app report; do
        printf 'SELECT 1;\n' | tcp "$u" "${1:-123456}"
    done
    printf 'SELECT 1;\n' | tcp app apppw nosuchdb
    printf 'SELECT 1;\n' | tcp blog blogpw shop
    printf 'SELECT 1;\n' | tcp report "" shop
}
# transfer FROM TO AMOUNT, in the background: locks FROM's row, waits a
# second, then locks TO's
transfer() {
    tcp app apppw shop <<SQL &
START TRANSACTION;
UPDATE accounts SET balance = balance - $3 WHERE id = $1;
SELECT SLEEP(1);
UPDATE accounts SET balance = balance + $3 WHERE id = $2;
COMMIT;
SQL
}
# two clients locking rows in opposite order
deadlock() {
    transfer 1 2 10; d1=$!
    transfer 2 1 5; d2=$!
    wait $d1 || true; wait $d2 || true
}
lockwait() {
    tcp admin adminpw shop <<'SQL' &
START TRANSACTION;
SELECT * FROM accounts WHERE id = 3 FOR UPDATE;
SELECT SLEEP(5);
COMMIT;
SQL
    l1=$!
    sleep 0.5
    printf 'UPDATE accounts SET balance = balance + 1 WHERE id = 3;\n' | app
    printf 'SET SESSION innodb_lock_wait_timeout = 1;\nDELETE FROM accounts WHERE id = 3;\n' | app
    wait $l1 || true
}
# more clients than max_connections, and the report user over its own limit
crowd() {
    cp=""
    for i in $(seq 1 18); do
        case $((i % 3)) in
            0) printf 'SELECT SLEEP(3);\n' ;;
            1) printf 'SELECT id, title FROM products WHERE id = %d AND SLEEP(2.%d) = 0;\n' "$i" "$i" ;;
            *) printf "SELECT GET_LOCK('cart-%d', 5), SLEEP(2);\n" $((i % 2)) ;;
        esac | tcp app apppw shop & cp="$cp $!"
    done
    sleep 1
    printf 'SELECT 1;\n' | app
    root -e "SHOW PROCESSLIST; SHOW GLOBAL STATUS LIKE 'Max_used_connections'"
    for p in $cp; do wait "$p" || true; done
    cp=""
    for _ in 1 2 3; do printf 'SELECT COUNT(*), SLEEP(2) FROM orders;\n' | tcp report reportpw shop & cp="$cp $!"; done
    for p in $cp; do wait "$p" || true; done
}
# clients that die or go quiet midway
aborted() {
    printf 'SELECT SLEEP(2);\nSELECT 1;\n' | mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P$P -uapp -papppw shop >/dev/null 2>&1 &
    k=$!; sleep 0.5; kill -9 $k 2>/dev/null || true; wait $k 2>/dev/null || true
    (printf 'SET SESSION wait_timeout = 2;\nSELECT id FROM products LIMIT 1;\n'; sleep 4; printf 'SELECT 2;\n') |
        tcp blog blogpw blog
    (printf 'SET SESSION net_read_timeout = 2;\n'; sleep 1) | tcp report reportpw shop
    sleep 2
}
junk() {
    for req in 'GARBAGE\r\n' 'GET / HTTP/1.1\r\nHost: db\r\n\r\n' '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03' \
               '\x00\x00\x00\x00' '\xff\xff\xff\x01AAAA'; do
        printf "$req" | timeout 3 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true
    done
    # connects, says nothing: connect_timeout
    (sleep 5) | timeout 6 nc 127.0.0.1 $P >/dev/null 2>&1 || true
}
# a burst of handshake errors (loopback is never put in the host cache, so
# the host is not blocked), then an operator's FLUSH HOSTS anyway
handshakes() {
    for _ in $(seq 1 9); do printf '\x01\x02\x03' | timeout 2 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true; done
    printf 'SELECT 1;\n' | app
    root -e "FLUSH HOSTS"
    printf 'SELECT 1;\n' | app
}
killer() {
    printf 'SELECT SLEEP(6);\n' | tcp report reportpw shop & k1=$!
    printf 'SELECT SLEEP(6);\n' | tcp app apppw shop & k2=$!
    sleep 1
    tcp admin adminpw <<'SQL'
SET @k = (SELECT CONCAT('KILL QUERY ', id) FROM information_schema.processlist WHERE user = 'report' AND info LIKE 'SELECT SLEEP%' LIMIT 1);
PREPARE s FROM @k; EXECUTE s; DEALLOCATE PREPARE s;
SET @k = (SELECT CONCAT('KILL CONNECTION ', id) FROM information_schema.processlist WHERE user = 'app' AND info LIKE 'SELECT SLEEP%' LIMIT 1);
PREPARE s FROM @k; EXECUTE s; DEALLOCATE PREPARE s;
KILL 999999;
SQL
    wait $k1 || true; wait $k2 || true
    printf 'KILL 1;\nSHUTDOWN;\nSET GLOBAL max_connections = 500;\n' | app
    adm -umonitor -pmonitorpw processlist
}
# a batch job fills the MEMORY table (max_heap_table_size)
table_full() {
    : > "$WORK/bulk.sql"
    for i in $(seq 1 14); do
        v=""
        for j in $(seq 1 12); do v="$v${v:+,}(MD5('bulk-$i-$j'), $j, REPEAT('x', 180))"; done
        echo "INSERT INTO sessions (sid, customer_id, data) VALUES $v;" >> "$WORK/bulk.sql"
    done
    app < "$WORK/bulk.sql"
}
read_only() {
    root -e "SET GLOBAL read_only = ON"
    round 8
    root -e "SET GLOBAL read_only = OFF"
}
users() {
    root <<'SQL'
CREATE USER 'intern'@'%' IDENTIFIED BY 'internpw';
GRANT SELECT ON shop.products TO 'intern'@'%';
CREATE USER 'intern'@'%' IDENTIFIED BY 'again';
CREATE USER 'legacy'@'%' IDENTIFIED BY 'legacypw' PASSWORD EXPIRE;
GRANT SELECT ON blog.* TO 'legacy'@'%';
CREATE USER 'contractor'@'%' IDENTIFIED BY 'contractorpw' ACCOUNT LOCK;
GRANT SELECT ON shop.* TO 'contractor'@'%';
SHOW GRANTS FOR 'app'@'%';
SQL
    tcp intern internpw shop <<'SQL'
SELECT sku, title FROM products LIMIT 3;
SELECT email FROM customers LIMIT 3;
UPDATE products SET stock = 0 WHERE id = 1;
SQL
    printf 'SELECT 1;\n' | tcp legacy legacypw blog
    printf 'SELECT 1;\n' | tcp contractor contractorpw shop
    root <<'SQL'
GRANT SELECT ON shop.customers TO 'intern'@'%';
REVOKE SELECT ON shop.products FROM 'intern'@'%';
ALTER USER 'legacy'@'%' IDENTIFIED BY 'newlegacypw';
ALTER USER 'contractor'@'%' ACCOUNT UNLOCK;
RENAME USER 'intern'@'%' TO 'junior'@'%';
GRANT SELECT ON nosuchdb.nosuchtable TO 'junior'@'%';
GRANT SELECT ON shop.* TO 'ghost'@'%';
FLUSH PRIVILEGES;
SQL
    printf 'SELECT email FROM customers LIMIT 2;\nSELECT sku FROM products LIMIT 2;\n' | tcp junior internpw shop
    printf 'SELECT id FROM posts LIMIT 2;\n' | tcp legacy newlegacypw blog
    printf 'SELECT COUNT(*) FROM orders;\n' | tcp contractor contractorpw shop
    printf 'CREATE USER x@y;\nDROP DATABASE blog;\n' | tcp contractor contractorpw shop
    root -e "DROP USER 'junior'@'%'; DROP USER 'contractor'@'%'; DROP USER 'nobody'@'%'"
}
backup() {
    timeout 60 mariadb-dump --no-defaults -S "$S" -ubackup -pbackuppw --single-transaction --routines \
        --events --triggers --ignore-table=shop.clicks --databases shop blog > "$WORK/backup.sql" 2>/dev/null || true
    timeout 30 mariadb-dump --no-defaults -S "$S" -ubackup -pwrongpw shop > /dev/null 2>&1 || true
    timeout 30 mariadb-dump --no-defaults --protocol=tcp -h127.0.0.1 -P$P -ureport -preportpw --databases shop blog > /dev/null 2>&1 || true
    timeout 30 mariadb-dump --no-defaults -S "$S" -ubackup -pbackuppw shop no_such_table > /dev/null 2>&1 || true
}
maint() {
    timeout 60 mariadb-check --no-defaults -S "$S" -uroot --databases shop blog >/dev/null 2>&1 || true
    timeout 60 mariadb-check --no-defaults -S "$S" -uroot --analyze shop >/dev/null 2>&1 || true
    root shop <<'SQL'
OPTIMIZE TABLE orders, audit_log, page_hits;
ALTER TABLE clicks ADD INDEX idx_kind_ts (kind, ts);
DELETE FROM clicks WHERE ts < NOW() - INTERVAL 20 DAY;
ANALYZE TABLE orders PERSISTENT FOR ALL;
CHECK TABLE audit_log EXTENDED;
REPAIR TABLE sessions;
FLUSH TABLES;
FLUSH LOGS;
FLUSH STATUS;
SHOW BINARY LOGS;
PURGE BINARY LOGS BEFORE NOW() - INTERVAL 1 DAY;
SHOW ENGINE INNODB STATUS;
SQL
}
schema_change() {
    root shop <<'SQL'
ALTER TABLE customers ADD COLUMN phone VARCHAR(20) NULL AFTER city, ALGORITHM=INSTANT;
ALTER TABLE orders ADD INDEX idx_created (created), ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE products ADD COLUMN weight_g INT UNSIGNED NULL;
ALTER TABLE products MODIFY title VARCHAR(10) NOT NULL;
ALTER TABLE customers DROP COLUMN nosuch;
CREATE INDEX idx_city ON customers (city);
CREATE INDEX idx_city ON customers (city);
DROP TABLE orders_archive;
CREATE TABLE coupons (code VARCHAR(16) PRIMARY KEY, pct TINYINT CHECK (pct BETWEEN 1 AND 90)) ENGINE=InnoDB;
INSERT INTO coupons VALUES ('WELCOME10', 10), ('HALF', 50), ('FREE', 100);
SQL
}
monitor() {
    adm -umonitor -pmonitorpw status
    adm -umonitor -pmonitorpw extended-status
    adm -umonitor -pmonitorpw ping
    adm -umonitor -pmonitorpw flush-tables
    adm -umonitor -pwrong ping
    printf 'SELECT * FROM information_schema.innodb_trx;\nSHOW ENGINE INNODB STATUS;\nSHOW SLAVE STATUS;\n' |
        tcp monitor monitorpw
}
# writers busy when the server is killed: a slow import (InnoDB, MyISAM and
# Aria rows, one at a time) and a big transaction not yet committed
busy_writers() {
    root shop -e "CREATE TABLE import_rows (id INT PRIMARY KEY, note VARCHAR(40)) ENGINE=InnoDB"
    printf 'START TRANSACTION;\nINSERT INTO import_rows SELECT seq, CONCAT(%s, seq) FROM seq_1_to_60000;\nSELECT SLEEP(20);\nCOMMIT;\n' \
        "'row '" | tcp admin adminpw shop &
    BW="$!"
    for i in $(seq 1 25); do
        echo "INSERT INTO orders (customer_id, total) VALUES ($((i * 7 % NCUST + 1)), $i.50);"
        echo "INSERT INTO audit_log (who, action) VALUES ('batch', 'import row $i');"
        echo "INSERT INTO page_hits (day, path, hits) VALUES (CURDATE(), '/import/$((i % 9))', 1) ON DUPLICATE KEY UPDATE hits = hits + 1;"
        sleep 0.1
    done | tcp app apppw shop &
    BW="$BW $!"
}

# --- the day ---------------------------------------------------------------
round 60
api 150 1
scanner wrongpw
round 50
deadlock
round 30
lockwait
schema_change
round 50
users
api 120 2
round 40
crowd
aborted
junk
round 40
killer
table_full
deadlock
round 40
backup
maint
monitor
read_only
round 40
handshakes
scanner letmein

# a crash: kill -9 under load, then InnoDB, binlog and MyISAM recovery
say "crash"
busy_writers
sleep 2
kill -9 "$MPID"; wait "$MPID" 2>/dev/null || true; forget
for p in $BW; do wait "$p" || true; done
start_db
printf 'SELECT COUNT(*) FROM audit_log;\nSELECT COUNT(*) FROM orders;\n' | app
round 50
api 100 3

# a clean shutdown, a typo in the configuration, a fix and a restart
say "restarts"
stop_db
write_cnf "innodb_bufer_pool_size = 64M"
timeout 20 /usr/sbin/mariadbd --defaults-file="$WORK/my.cnf" >/dev/null 2>&1 || true
write_cnf ""
start_db
# a second server on the same port (its own datadir, same error log)
mkdir -p "$WORK/data2"; chown mysql:mysql "$WORK/data2"
mariadb-install-db --no-defaults --user=mysql --datadir="$WORK/data2" --auth-root-authentication-method=socket \
    --skip-test-db >/dev/null 2>&1 || true
timeout 20 /usr/sbin/mariadbd --defaults-file="$WORK/my.cnf" --datadir="$WORK/data2" \
    --socket="$WORK/run/second.sock" --pid-file="$WORK/run/second.pid" --skip-log-bin \
    --general-log=OFF --slow-query-log=OFF >/dev/null 2>&1 || true
round 50
deadlock
aborted
round 40
backup
monitor
# the event whose table was dropped has been failing; the DBA disables it
root shop -e "ALTER EVENT ev_archive_orders DISABLE; SHOW EVENTS"
round 30
stop_db
sleep 1
emit mariadb "$L/error.log" "$L/slow.log" "$L/general.log"
