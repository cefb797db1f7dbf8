#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# CUPS (Debian package cups-daemon, driven with cups-client and cups-bsd), a
# print server on loopback with its own configuration, spool and state,
# logging at LogLevel info to its error_log. HELD OUT (second set): never
# trained on (collect.sh --held-out-2).
# Traffic: print jobs of text, PDF, PostScript, image and binary files from
# several users to raw queues, a class and a queue relayed over IPP, with
# copies, media, sides, priorities, holds, releases, moves, cancels, queue
# disable/enable and reject/accept, printers and classes added, modified and
# deleted. Faults: unknown queues and jobs, bad option values, formats no
# filter converts, users over quota, over the per-user job limit or not
# allowed on a queue, a device that is down (stuck jobs canceled), a remote
# queue that does not exist (printer stopped), wrong admin passwords,
# unauthorised admin operations, malformed HTTP and IPP, a reload and a
# restart.
. "$(dirname "$0")/common.sh"
ensure_pkg cups-daemon cups-client cups-bsd curl netcat-openbsd
# the package's own scheduler must stay down (policy-rc.d kept it from
# starting; make sure, as ours is the only one wanted)
if pgrep -x cupsd >/dev/null; then service cups stop >/dev/null 2>&1 || true; fi
P=18631
mkdir -p "$WORK/etc" "$WORK/log" "$WORK/files" "$WORK/spool/tmp" "$WORK/cache" "$WORK/run"
chgrp lp "$WORK/etc" "$WORK/spool" "$WORK/spool/tmp" "$WORK/cache" "$WORK/run"
chmod 0710 "$WORK/spool"; chmod 1770 "$WORK/spool/tmp"; chmod 0770 "$WORK/cache"
cat > "$WORK/cups-files.conf" <<CFG
ServerRoot $WORK/etc
RequestRoot $WORK/spool
TempDir $WORK/spool/tmp
CacheDir $WORK/cache
StateDir $WORK/run
ErrorLog $WORK/log/error_log
AccessLog $WORK/log/access_log
PageLog $WORK/log/page_log
Printcap $WORK/printcap
FileDevice Yes
SystemGroup root
User lp
Group lp
LogFileGroup root
CFG
cat > "$WORK/cupsd.conf" <<CFG
LogLevel info
MaxLogSize 0
Listen 127.0.0.1:$P
ServerName localhost
ServerAdmin root@localhost
Browsing No
WebInterface No
DefaultAuthType Basic
ErrorPolicy stop-printer
MaxJobsPerUser 12
MaxCopies 50
MaxJobTime 20
<Location />
  Order allow,deny
  Allow localhost
</Location>
<Location /admin>
  AuthType Default
  Require user @SYSTEM
  Order allow,deny
  Allow localhost
</Location>
<Location /admin/conf>
  AuthType Default
  Require user @SYSTEM
  Order allow,deny
  Allow localhost
</Location>
<Location /admin/log>
  AuthType Default
  Require user @SYSTEM
  Order allow,deny
  Allow localhost
</Location>
<Policy default>
  JobPrivateAccess default
  JobPrivateValues default
  SubscriptionPrivateAccess default
  SubscriptionPrivateValues default
  <Limit Create-Job Print-Job Print-URI Validate-Job>
    Order deny,allow
  </Limit>
  <Limit Send-Document Send-URI Hold-Job Release-Job Restart-Job Purge-Jobs Set-Job-Attributes Create-Job-Subscription Renew-Subscription Cancel-Subscription Get-Notifications Reprocess-Job Cancel-Current-Job Suspend-Current-Job Resume-Job Cancel-My-Jobs Close-Job CUPS-Move-Job CUPS-Get-Document>
    Require user @OWNER @SYSTEM
    Order deny,allow
  </Limit>
  <Limit CUPS-Add-Modify-Printer CUPS-Delete-Printer CUPS-Add-Modify-Class CUPS-Delete-Class CUPS-Set-Default CUPS-Get-Devices>
    AuthType Default
    Require user @SYSTEM
    Order deny,allow
  </Limit>
  <Limit Pause-Printer Resume-Printer Enable-Printer Disable-Printer Pause-Printer-After-Current-Job Hold-New-Jobs Release-Held-New-Jobs Deactivate-Printer Activate-Printer Restart-Printer Shutdown-Printer Startup-Printer Promote-Job Schedule-Job-After Cancel-Jobs CUPS-Accept-Jobs CUPS-Reject-Jobs>
    AuthType Default
    Require user @SYSTEM
    Order deny,allow
  </Limit>
  <Limit Cancel-Job CUPS-Authenticate-Job>
    Require user @OWNER @SYSTEM
    Order deny,allow
  </Limit>
  <Limit All>
    Order deny,allow
  </Limit>
</Policy>
CFG
# a PostScript printer description with no filters behind it: CUPS has
# nothing here to convert documents for it
cat > "$WORK/files/laser.ppd" <<'PPD'
*PPD-Adobe: "4.3"
*FormatVersion: "4.3"
*FileVersion: "1.0"
*LanguageVersion: English
*LanguageEncoding: ISOLatin1
*PCFileName: "LASER.PPD"
*Manufacturer: "Generic"
*Product: "(Laser)"
*ModelName: "Generic PostScript Laser"
*ShortNickName: "Generic PS Laser"
*NickName: "Generic PostScript Laser"
*PSVersion: "(3010.000) 0"
*LanguageLevel: "3"
*ColorDevice: False
*DefaultColorSpace: Gray
*FileSystem: False
*Throughput: "20"
*OpenUI *PageSize/Media Size: PickOne
*OrderDependency: 10 AnySetup *PageSize
*DefaultPageSize: A4
*PageSize Letter/US Letter: "<</PageSize[612 792]>>setpagedevice"
*PageSize A4/A4: "<</PageSize[595 842]>>setpagedevice"
*CloseUI: *PageSize
*OpenUI *PageRegion: PickOne
*OrderDependency: 10 AnySetup *PageRegion
*DefaultPageRegion: A4
*PageRegion Letter/US Letter: "<</PageSize[612 792]>>setpagedevice"
*PageRegion A4/A4: "<</PageSize[595 842]>>setpagedevice"
*CloseUI: *PageRegion
*DefaultImageableArea: A4
*ImageableArea Letter/US Letter: "18 36 594 756"
*ImageableArea A4/A4: "18 36 577 806"
*DefaultPaperDimension: A4
*PaperDimension Letter/US Letter: "612 792"
*PaperDimension A4/A4: "595 842"
PPD
# the documents to print
F=$WORK/files
printf 'Quarterly memo\n\nThe plant stays closed on Friday.\n' > "$F/memo.txt"
seq -f 'line %g of the inventory listing' 1 400 > "$F/inventory.txt"
seq -f 'row %g,widget,12.50,in stock' 1 6000 > "$F/export.csv"
printf '%%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [] /Count 0>> endobj\ntrailer <</Root 1 0 R>>\n%%%%EOF\n' > "$F/report.pdf"
cp "$F/report.pdf" "$F/invoice-0042.pdf"
printf '%%!PS-Adobe-3.0\n%%%%Pages: 1\n/Helvetica findfont 24 scalefont setfont\n72 720 moveto (Chart) show showpage\n%%%%EOF\n' > "$F/chart.ps"
printf '\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9' > "$F/photo.jpg"
head -c 3000 /dev/zero | tr '\0' '\001' > "$F/blob.bin"
chmod 644 "$F"/*

export CUPS_SERVER=127.0.0.1:$P CUPS_STATEDIR=$WORK/run
start_cupsd() { bg cupsd -f -c "$WORK/cupsd.conf" -s "$WORK/cups-files.conf"; CPID=$LASTPID; wait_port $P && sleep 1; }
stop_cupsd() { kill "$CPID" 2>/dev/null || true; wait "$CPID" 2>/dev/null || true; }
start_cupsd
q() { "$@" >/dev/null 2>&1 </dev/null || true; }
say "queues"
q lpadmin -p office -E -v file:///dev/null -m raw -D "Office printer" -L "Floor 2"
q lpadmin -p lab -E -v file:///dev/null -m raw -D "Lab printer" -L "Building B"
q lpadmin -p reception -E -v "ipp://127.0.0.1:$P/printers/office" -m raw -L "Front desk"
q lpadmin -p plotter -E -v "ipp://127.0.0.1:18639/ipp/print" -m raw -L "Drawing office"
q lpadmin -p annex -E -v "ipp://127.0.0.1:$P/printers/annex-old" -m raw -L "Annex"
q lpadmin -p laser -E -v file:///dev/null -P "$F/laser.ppd"
q lpadmin -p quota -E -v file:///dev/null -m raw -o job-quota-period=3600 -o job-k-limit=20 -o job-page-limit=5
q lpadmin -p finance -E -v file:///dev/null -m raw -u allow:alice,carol
q lpadmin -p office -c team
q lpadmin -p lab -c team
q cupsenable team; q cupsaccept team
q lpadmin -d office

RANDOM=18631
USERS=(alice bob carol dave erin frank root)
GOOD=(office lab team reception office lab)
DOCS=(memo.txt inventory.txt report.pdf invoice-0042.pdf chart.ps photo.jpg memo.txt report.pdf blob.bin)
OPTS=("-n 2" "-o sides=two-sided-long-edge" "-o media=A4" "-o media=Letter" "-o landscape"
      "-o page-ranges=1-3" "-q 80" "-q 10" "-o print-color-mode=monochrome" "-o number-up=2"
      "-o fit-to-page" "-o job-priority=70" "-o sides=one-sided" "-o collate=true -n 3" ""
      "-o notify-recipient-uri=mailto:printing@example.test" "-o job-sheets=standard")
BAD=("-n 99" "-n 0" "-o number-up=3" "-o page-ranges=5-2" "-o job-priority=500"
     "-o sides=bogus" "-o job-hold-until=25:99" "-o print-quality=7")
QS=(office lab reception plotter annex laser quota finance)
ERRP=(stop-printer abort-job retry-job retry-current-job)
JOBS=()  # ids of jobs submitted
HELD=()  # ids of jobs held
pick() { eval "echo \${$1[\$((RANDOM % \${#$1[@]}))]}"; }
# submit a job; remember its id
submit() {
    id=$(lp "$@" 2>/dev/null </dev/null | sed -n 's/^request id is .*-\([0-9][0-9]*\) .*/\1/p')
    if [ -n "$id" ]; then JOBS+=("$id"); fi
}
anyjob() { if [ ${#JOBS[@]} -gt 0 ]; then echo "${JOBS[$((RANDOM % ${#JOBS[@]}))]}"; else echo 1; fi; }
round() {
    for _ in $(seq 1 60); do
        u=$(pick USERS); d=$(pick DOCS); g=$(pick GOOD)
        case $((RANDOM % 40)) in
            0|1|2|3|4|5|6|7) submit -U "$u" -d "$g" $(pick OPTS) -t "$u-${d%.*}" "$F/$d" ;;
            8|9) q lpr -U "$u" -P "$g" -# $((RANDOM % 3 + 1)) -T "$d" "$F/$d" ;;
            10) id=$(lp -U "$u" -d "$g" -H hold "$F/$d" 2>/dev/null </dev/null | sed -n 's/.*-\([0-9][0-9]*\) .*/\1/p')
                if [ -n "$id" ]; then HELD+=("$id"); fi ;;
            11) if [ ${#HELD[@]} -gt 0 ]; then
                    h=${HELD[0]}; HELD=("${HELD[@]:1}")
                    case $((RANDOM % 3)) in
                        0) q cancel "$h" ;;
                        1) q lp -i "$h" -o job-priority=$((RANDOM % 100 + 1)) -H resume ;;
                        *) q lp -i "$h" -H resume ;;
                    esac
                fi ;;
            12) q cancel "$(anyjob)" ;;                       # mostly finished already
            13) q cancel $((RANDOM % 900 + 5000)) ;;          # no such job
            14) q lp -i "$(anyjob)" -H resume ;;
            15) q lpmove "$(anyjob)" "$(pick GOOD)" ;;
            16) submit -U "$u" -d "$g" $(pick BAD) "$F/$d" ;;
            17) q lp -U "$u" -d "$(pick QS)-old" "$F/$d"; q lpr -P ghost "$F/$d" ;;
            18) submit -U "$u" -d laser "$F/$d" ;;
            19) submit -U "$u" -d quota "$F/export.csv" ;;
            20) submit -U "$u" -d finance "$F/invoice-0042.pdf" ;;
            21) submit -U "$u" -d annex "$F/$d" ;;
            22) q cupsenable annex ;;
            23) submit -U "$u" -d plotter "$F/chart.ps" ;;
            24) if [ $((RANDOM % 3)) = 0 ]; then q cancel -a plotter; else q lpstat -p plotter -l; fi ;;
            25) x=$(pick GOOD); q cupsdisable -r "paper jam in tray $((RANDOM % 3 + 1))" "$x"
                submit -U "$u" -d "$x" "$F/$d"; q cupsenable "$x" ;;
            26) x=$(pick GOOD); q cupsreject -r "toner low" "$x"
                submit -U "$u" -d "$x" "$F/$d"; q cupsaccept "$x" ;;
            27) q lpstat -t; q lpq -P "$g"; q lpstat -W completed -o ;;
            28) n=$((RANDOM % 5)); q lpadmin -p "temp$n" -E -v "file:///dev/null" -m raw -D "Temporary $n" ;;
            29) q lpadmin -x "temp$((RANDOM % 5))" ;;
            30) q lpadmin -p "$(pick GOOD)" -o printer-error-policy="$(pick ERRP)" ;;
            31) q lpadmin -p lab -L "Building B, room $((RANDOM % 300))" -D "Lab printer $((RANDOM % 9))" ;;
            32) q lpadmin -p "temp$((RANDOM % 5))" -c team; q lpadmin -p "temp$((RANDOM % 5))" -r team ;;
            33) q runuser -u nobody -- env CUPS_SERVER="$CUPS_SERVER" cupsdisable "$(pick GOOD)"
                q runuser -u nobody -- env CUPS_SERVER="$CUPS_SERVER" lpadmin -x "$(pick QS)" ;;
            34) q runuser -u nobody -- env CUPS_SERVER="$CUPS_SERVER" cancel -a "$g"
                q runuser -u nobody -- env CUPS_SERVER="$CUPS_SERVER" lp -d "$g" "$F/$d" ;;
            35) q cupsdisable --hold "$g"; submit -U "$u" -d "$g" "$F/$d"; q cupsenable --release "$g" ;;
            36) q lpadmin -d "$(pick GOOD)" ;;
            37) q lprm -P "$g" "$(anyjob)" ;;
            38) q cancel -U "$u" "$(anyjob)" ;;
            *) id=$(lp -U "$u" -d "$g" -o job-hold-until=indefinite "$F/$d" 2>/dev/null </dev/null |
                        sed -n 's/.*-\([0-9][0-9]*\) .*/\1/p')
               if [ -n "$id" ]; then q lp -i "$id" -H resume; fi ;;
        esac
    done
}
# admin pages with wrong passwords (each makes the scheduler wait on PAM)
badauth() {
    for c in root:letmein admin:admin mallory:x; do
        curl -s -o /dev/null -m 10 -u "$c" "http://127.0.0.1:$P/admin/log/error_log" || true
    done
}
# malformed HTTP and IPP straight on the socket
rawreq() {
    for req in 'GARBAGE\r\n\r\n' 'GET / HTTP/1.1\r\n\r\n' 'GET / HTTP/9.9\r\nHost: localhost\r\n\r\n' \
               '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03' \
               'GET /%%%% HTTP/1.1\r\nHost: localhost\r\n\r\n' \
               'GET /printers/office HTTP/1.1\r\nHost: printer.evil.example\r\n\r\n' \
               'POST /printers/office HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/ipp\r\nContent-Length: 12\r\n\r\n\x09\x09\x00\x02\x00\x00\x00\x01\x01\x47\xff\xff' \
               'POST /printers/office HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/ipp\r\nContent-Length: 9\r\n\r\n\x02\x00\x00\x02\x00\x00\x00\x01\x03' \
               'POST /printers/office HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc' \
               'PUT /admin/conf/cupsd.conf HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello' \
               'GET /admin/log/error_log HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic !!!!\r\n\r\n' \
               'DELETE /printers/office HTTP/1.1\r\nHost: localhost\r\n\r\n'; do
        printf "$req" | timeout 3 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true
    done
}
# one user queues more jobs than allowed, then cancels them all
pileup() {
    pile=""
    for _ in $(seq 1 14); do
        pile="$pile $(lp -U dave -d lab -H hold "$F/inventory.txt" 2>/dev/null </dev/null |
                      sed -n 's/.*-\([0-9][0-9]*\) .*/\1/p')"
    done
    for id in $pile; do q cancel "$id"; done
}
say "traffic"
round; round; round
badauth
round; round; round
pileup
rawreq
round; round; round
# the scheduler rereads its configuration
kill -HUP "$CPID"; sleep 2; wait_port $P; sleep 1
round; round; round
badauth
# the scheduler restarts with jobs pending
stop_cupsd; sleep 1
start_cupsd
round; round; round
pileup
rawreq
round; round; round
round; round
q cancel -a plotter
stop_cupsd
emit cups "$WORK/log/error_log"
