#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# SpamAssassin's daemon (Debian packages spamassassin, spamd, spamc) on
# loopback with the rules the package ships (no sa-update, no network tests),
# per-user virtual configuration directories with Bayes, logging to a file;
# the clients are spamc and raw sockets (socat).
# HELD OUT (third set): never trained on (collect.sh --held-out-3).
# Traffic: spamc checks of a fixed set of messages (ham from colleagues,
# family, machines and mailing lists, newsletters, HTML mail, attachments,
# bounces, mail in other charsets, spam of many kinds, the GTUBE test string,
# large messages) for a dozen users, in every reporting mode (process, -c,
# -R, -r, -y, -E, --headers, compressed), Bayes learning and forgetting,
# reports and revokes, pings; children recycled after a few connections.
# Faults: clients from an address that is not allowed, malformed and unknown
# SPAMC requests, wrong content lengths, clients that disconnect midway or
# stall, messages over the size limit (skipped), a user whose prefs file is
# broken, too many simultaneous clients for the children, a child killed
# with SIGKILL, a SIGHUP reload, a restart, a second daemon on the same port
# (it fails on its stderr, before it opens the log),
# a site configuration with errors on one start.
. "$(dirname "$0")/common.sh"
ensure_pkg spamassassin spamd spamc socat
P=18711
RANDOM=18711
LOG=$WORK/spamd.log
U=$WORK/users            # virtual config dirs, one per user (%u)
M=$WORK/msgs
SITE=$WORK/site
mkdir -p "$U" "$M" "$SITE"

# --- site configuration: the shipped rules, no network tests -----------------
cp /etc/spamassassin/*.pre "$SITE/"
write_site() {
    cat > "$SITE/local.cf" <<CFG
# local.cf for the txl corpus (loopback only, no network tests)
dns_available no
skip_rbl_checks 1
use_razor2 0
use_pyzor 0
use_bayes 1
bayes_auto_learn 1
bayes_auto_learn_threshold_nonspam 0.1
bayes_auto_learn_threshold_spam 9.0
bayes_min_ham_num 8
bayes_min_spam_num 8
bayes_learn_to_journal 0
required_score 5.0
report_safe 1
rewrite_header Subject *****SPAM*****
add_header all Checker-Version SpamAssassin _VERSION_ (_SUBVERSION_) on _HOSTNAME_
add_header spam Flag _YESNOCAPS_
trusted_networks 10.20.0.0/16
internal_networks 10.20.0.0/16
body LOCAL_INVOICE_ZIP /invoice.{0,20}attached/i
score LOCAL_INVOICE_ZIP 1.5
describe LOCAL_INVOICE_ZIP Mentions an attached invoice
$1
CFG
}
write_site ""

# --- per-user preferences ------------------------------------------------------
prefs() { mkdir -p "$U/$1"; cat > "$U/$1/user_prefs"; }
prefs alice <<'CFG'
required_score 4.0
welcomelist_from *@corp.example
blocklist_from *@lottery-intl.example
report_safe 0
CFG
prefs bob <<'CFG'
required_score 6.5
rewrite_header Subject [SPAM]
score MISSING_MID 0.1
CFG
prefs carol@corp.example <<'CFG'
report_safe 2
ok_locales en de
score HTML_MESSAGE 0.5
whitelist_from news@shop.example
CFG
prefs sales@shop.example <<'CFG'
required_score 8.0
score BAYES_99 4.0
blacklist_from *@pharma-direct.example
CFG
# a user whose prefs file is broken: typos, admin-only settings, junk
prefs mallory <<'CFG'
required_score five
scor MISSING_DATE 1.0
bayes_path /etc/spamassassin/bayes
header MALLORY_RULE From =~ /(unclosed/
score GTUBE -1000
ifplugin Mail::SpamAssassin::Plugin::NoSuchPlugin
CFG
printf 'score HTML_MESSAGE \xff\xfe\n' >> "$U/mallory/user_prefs"
chown -R debian-spamd:debian-spamd "$U"

# --- the messages ----------------------------------------------------------------
NETS=(81.169.145 212.227.15 62.210.16 91.198.174 185.45.12 45.83.40 102.89.32 217.72.192
      31.13.72 5.9.41 176.9.103 46.4.52 148.251.70 88.198.24 195.154.133 80.67.18)
hdr() {  # hdr 'NAME <FROM>' 'TO>' SUBJECT DAY 'MSGID>' [RELAY]
    h=${6:-mx.corp.example}; d=${1##*@}; d=${d%>}; q=${5//[^A-Za-z0-9]/}; q=${q^^}
    c=$(printf %s "$d" | cksum); c=${c%% *}
    ip=${NETS[$((c % ${#NETS[@]}))]}.$((c % 200 + 20))
    cat <<H
Return-Path: <${1##*<}
Received: from ${h} (${h} [10.20.0.25])
	by mail.corp.example (Postfix) with ESMTPS id ${q:0:10}
	for <$2; $4 +0100
Received: from client.$d ($([ "$RDNS" = 1 ] && echo "mail-out.$d" || echo unknown) [$ip])
	by ${h} (Postfix) with ESMTP id ${q:2:9}
	for <$2; $4 +0100
Date: $4 +0100
From: $1
To: <$2
Subject: $3
Message-ID: <$5
MIME-Version: 1.0
H
}
RDNS=1   # ham comes from hosts with reverse DNS, spam mostly not
b64() { base64 -w 76; }
pdfish() { { printf '%%PDF-1.4\n'; seq 1 "$1" | sed 's/^/obj << \/Length /'; printf '%%%%EOF\n'; } | gzip -n -9; }

hdr 'Anna Berg <anna.berg@corp.example>' 'alice@corp.example>' 'Re: Q3 planning meeting moved to Thursday' 'Tue, 03 Nov 2026 09:14:22' 'CAF3a91b2c0d1e@corp.example>' > "$M/ham-meeting"
cat >> "$M/ham-meeting" <<'B'
In-Reply-To: <CAF3a91b2c0d00@corp.example>
References: <CAF3a91b2c0d00@corp.example>
Content-Type: text/plain; charset=us-ascii

Hi Alice,

Thursday at 10:30 works for me. I booked the small room on the second
floor, the projector there was fixed last week. Could you bring the
draft of the budget sheet? I'd like to go through the travel numbers
before we send it to finance.

> Can we move the Q3 planning to Thursday? Tuesday is full of interviews.

Thanks,
Anna
B
hdr 'Mum <helga.lind@mailbox.example>' 'bob@corp.example>' 'Sunday lunch' 'Sat, 07 Nov 2026 18:02:40' '20261107180240.77F1@mailbox.example>' > "$M/ham-family"
cat >> "$M/ham-family" <<'B'
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

Hello dear,

are you coming on Sunday? Dad wants to try the new oven so there will be
far too much food. Bring the kids if they are not too tired from the
football. Your sister says she will be late, as usual.

Love, Mum
B
hdr 'CI <noreply@ci.corp.example>' 'dev-team@corp.example>' '[build] txl main #4812 failed: test_parse_header' 'Mon, 09 Nov 2026 02:11:05' 'ci-4812.1699492265@ci.corp.example>' ci.corp.example > "$M/ham-ci"
cat >> "$M/ham-ci" <<'B'
Auto-Submitted: auto-generated
X-CI-Job: 4812
Content-Type: text/plain; charset=us-ascii

Build #4812 of txl (branch main) FAILED after 6 min 12 s.

Failed tests (1 of 412):
  test_parse_header ......... FAIL  tests/test_parse.c:188: expected 3, got 4

Changes since last success:
  a41c9e2  parse: accept folded headers (Jonas Weber)

Console output: https://ci.corp.example/job/txl/4812/console
B
hdr 'Billing <billing@hosting.example>' 'alice@corp.example>' 'Your invoice INV-2026-11-0042' 'Sun, 01 Nov 2026 06:00:01' 'inv202611004201@hosting.example>' > "$M/ham-invoice"
cat >> "$M/ham-invoice" <<B
Content-Type: multipart/mixed; boundary="=_inv_boundary_42"

--=_inv_boundary_42
Content-Type: text/plain; charset=us-ascii

Dear customer,

please find your invoice for November 2026 attached (EUR 49.00, VPS-M,
2 IPv4 addresses). The amount will be charged to your card ending 4421
on 15 November. No action is needed.

Kind regards, your hosting team
--=_inv_boundary_42
Content-Type: application/pdf; name="INV-2026-11-0042.pdf"
Content-Disposition: attachment; filename="INV-2026-11-0042.pdf"
Content-Transfer-Encoding: base64

$(pdfish 900 | b64)
--=_inv_boundary_42--
B
hdr 'Jonas Weber <jonas.weber@corp.example>' 'team@corp.example>' 'Photos from the team offsite' 'Fri, 13 Nov 2026 16:45:10' 'f0t0s-13-11@corp.example>' > "$M/ham-photos"
cat >> "$M/ham-photos" <<B
Content-Type: multipart/mixed; boundary="----=_Part_118_2026"

------=_Part_118_2026
Content-Type: text/plain; charset=utf-8

Here are a few pictures from the offsite, the rest are on the share.
------=_Part_118_2026
Content-Type: image/jpeg; name="IMG_2041.jpg"
Content-Disposition: attachment; filename="IMG_2041.jpg"
Content-Transfer-Encoding: base64

$(seq 1 9000 | gzip -n | b64)
------=_Part_118_2026
Content-Type: image/jpeg; name="IMG_2042.jpg"
Content-Disposition: attachment; filename="IMG_2042.jpg"
Content-Transfer-Encoding: base64

$(seq 5000 16000 | gzip -n | b64)
------=_Part_118_2026--
B
hdr 'Shop Weekly <news@shop.example>' 'carol@corp.example>' 'Your weekly picks: garden tools and winter deals' 'Thu, 12 Nov 2026 07:30:00' 'nl-2026-46.carol@shop.example>' bounce.shop.example > "$M/news-shop"
cat >> "$M/news-shop" <<'B'
List-Unsubscribe: <https://shop.example/unsub?u=c7a1>, <mailto:unsub-c7a1@shop.example>
List-Unsubscribe-Post: List-Unsubscribe=One-Click
Precedence: bulk
Content-Type: multipart/alternative; boundary="nl46"

--nl46
Content-Type: text/plain; charset=utf-8

This week: garden tools from 9.99, winter jackets 20% off, free delivery
over 50 EUR. View online: https://shop.example/newsletter/46
Unsubscribe: https://shop.example/unsub?u=c7a1
--nl46
Content-Type: text/html; charset=utf-8

<html><head><title>Weekly picks</title></head><body>
<table width="600"><tr><td><img src="https://img.shop.example/nl/46/header.png" alt="Shop"></td></tr>
<tr><td><h2>Garden tools from 9.99</h2><p>Get your garden ready for spring.
<a href="https://shop.example/c/garden?utm_source=nl46">Shop now</a></p></td></tr>
<tr><td><h2>Winter jackets 20% off</h2><p><a href="https://shop.example/c/jackets?utm_source=nl46">See the collection</a></p></td></tr>
<tr><td><font size="1" color="#999999">You receive this mail because you subscribed at shop.example.
<a href="https://shop.example/unsub?u=c7a1">Unsubscribe</a></font></td></tr></table>
</body></html>
--nl46--
B
hdr 'LWN.net <lwn@lwn.example>' 'bob@corp.example>' 'LWN.net Weekly Edition for November 12, 2026' 'Thu, 12 Nov 2026 22:05:17' 'lwn-we-20261112@lwn.example>' > "$M/news-digest"
cat >> "$M/news-digest" <<'B'
List-Id: LWN weekly <weekly.lwn.example>
Precedence: list
Content-Type: text/plain; charset=utf-8

The LWN.net Weekly Edition for November 12, 2026 is available.

Front: Rust in the kernel, one year on; A new scheduler for desktops.
Briefs: Debian point release; Python 3.15 beta; OpenSSH security fix.
Announcements: Newsletters, conferences, security updates, patches.
Kernel: The 6.19 merge window; Memory tiering; BPF arenas.
Distributions: Fedora's new installer; Ubuntu on RISC-V.
Development: GCC 16 plans; Testing terminal emulators.
B
hdr 'Nordbank <service@nordbank.example>' 'alice@corp.example>' 'Your monthly account statement is ready' 'Mon, 02 Nov 2026 05:12:44' 'stmt.2026-10.88213@nordbank.example>' mailout.nordbank.example > "$M/html-bank"
cat >> "$M/html-bank" <<'B'
Content-Type: text/html; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

<html><body style=3D"font-family:Arial">
<p>Dear customer,</p>
<p>your statement for October 2026 is ready in online banking. For your
security we never ask for your PIN or password by e-mail.</p>
<p>Log in as usual at <a href=3D"https://www.nordbank.example/">www.nordbank.example</a>.</p>
<p>Nordbank AG =B7 Hauptstra=DFe 1 =B7 20095 Hamburg</p>
</body></html>
B
hdr 'Mail Delivery System <MAILER-DAEMON@mx.corp.example>' 'dave@corp.example>' 'Undelivered Mail Returned to Sender' 'Wed, 11 Nov 2026 13:20:09' '20261111132009.5C2A1@mx.corp.example>' > "$M/bounce"
cat >> "$M/bounce" <<'B'
Auto-Submitted: auto-replied
Content-Type: multipart/report; report-type=delivery-status; boundary="5C2A1.1699705209/mx.corp.example"

--5C2A1.1699705209/mx.corp.example
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.corp.example.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

<j.doe@old-partner.example>: host mx.old-partner.example[203.0.113.7] said:
    550 5.1.1 <j.doe@old-partner.example>: Recipient address rejected: User
    unknown in virtual mailbox table (in reply to RCPT TO command)

--5C2A1.1699705209/mx.corp.example
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.corp.example
Arrival-Date: Wed, 11 Nov 2026 13:20:07 +0100

Final-Recipient: rfc822; j.doe@old-partner.example
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 User unknown

--5C2A1.1699705209/mx.corp.example--
B
hdr 'Calendar <calendar@corp.example>' 'bob@corp.example>' 'Invitation: Release review @ Mon Nov 16, 2026 14:00' 'Fri, 13 Nov 2026 11:02:00' 'cal-rr-2026-11-16@corp.example>' > "$M/ham-calendar"
cat >> "$M/ham-calendar" <<'B'
Content-Type: text/calendar; charset=utf-8; method=REQUEST

BEGIN:VCALENDAR
PRODID:-//corp.example//Calendar//EN
VERSION:2.0
METHOD:REQUEST
BEGIN:VEVENT
DTSTART:20261116T130000Z
DTEND:20261116T140000Z
SUMMARY:Release review
ORGANIZER:mailto:anna.berg@corp.example
ATTENDEE;RSVP=TRUE:mailto:bob@corp.example
LOCATION:Room 2.14
UID:rr-2026-11-16@corp.example
END:VEVENT
END:VCALENDAR
B
hdr 'Accounts <no-reply@git.corp.example>' 'carol@corp.example>' 'Password reset requested' 'Tue, 10 Nov 2026 21:41:33' 'pwreset-9f2e@git.corp.example>' git.corp.example > "$M/ham-reset"
cat >> "$M/ham-reset" <<'B'
Content-Type: text/plain; charset=us-ascii

Someone (hopefully you) asked to reset the password of your account
"carol" on git.corp.example from 192.0.2.144.

To choose a new password, open this link within 30 minutes:
https://git.corp.example/user/reset?token=9f2e5c0d77b1

If it was not you, ignore this mail; your password stays the same.
B
# mail in other charsets (converted with iconv, so the bytes are real)
charset() {  # charset FILE FROM TO SUBJECT DAY ID CHARSET CTE
    f=$1; cs=$7
    hdr "$2" "$3" "$4" "$5" "$6" > "$f"
    printf 'Content-Type: text/plain; charset=%s\nContent-Transfer-Encoding: %s\n\n' "$cs" "$8" >> "$f"
    if [ "$8" = base64 ]; then iconv -f utf-8 -t "$cs" | b64 >> "$f"
    else iconv -f utf-8 -t "$cs" >> "$f"; fi
}
charset "$M/ham-german" 'Jürgen Maßmann <j.massmann@partner.example>' 'carol@corp.example>' 'Angebot fuer die Wartung 2027' 'Wed, 04 Nov 2026 10:22:19' 'ang2027-113@partner.example>' iso-8859-1 8bit <<'B'
Sehr geehrte Frau Lind,

anbei wie besprochen unser Angebot für die Wartung der Server im Jahr
2027. Die Preise gelten bis Ende Dezember. Für Rückfragen stehe ich
Ihnen gern zur Verfügung; nächste Woche bin ich allerdings nur
vormittags erreichbar.

Mit freundlichen Grüßen
Jürgen Maßmann
B
charset "$M/ham-russian" 'Olga <olga.petrova@partner-ru.example>' 'dave@corp.example>' 'Re: поставка оборудования' 'Thu, 05 Nov 2026 12:01:55' 'olga-5511@partner-ru.example>' koi8-r base64 <<'B'
Добрый день, Дэйв!

Оборудование отправлено сегодня утром, номер накладной 4471-22.
Ожидаемая дата доставки - следующий вторник. Счёт пришлю отдельно.

С уважением,
Ольга
B
charset "$M/ham-japanese" 'Kenji Sato <k.sato@partner-jp.example>' 'bob@corp.example>' 'meeting notes' 'Fri, 06 Nov 2026 03:15:00' 'ks-20261106@partner-jp.example>' iso-2022-jp 7bit <<'B'
ボブさん

本日の会議の議事録をお送りします。
次回は十二月三日の午後二時からです。
よろしくお願いいたします。

佐藤
B
charset "$M/ham-chinese" 'Li Wei <li.wei@partner-cn.example>' 'alice@corp.example>' 'shipment schedule' 'Mon, 09 Nov 2026 08:40:12' 'lw-7781@partner-cn.example>' gb2312 base64 <<'B'
您好，

附上下个月的发货计划，请查收。如有问题请随时联系我。

谢谢！
李伟
B
charset "$M/ham-french" 'Camille Roux <camille.roux@partner-fr.example>' 'carol@corp.example>' 'Compte rendu de la réunion' 'Tue, 10 Nov 2026 15:33:48' 'cr-1110@partner-fr.example>' utf-8 quoted-printable <<'B'
Bonjour Carol,

voici le compte rendu de la réunion de mardi. Les prochaines étapes
sont notées à la fin ; merci de vérifier les dates prévues pour
l'installation à Lyon.

Bien à vous,
Camille
B
# spam
RDNS=0
hdr 'Dr. Mark Okafor <mark.okafor1956@freemail.example>' 'undisclosed-recipients:;>' 'URGENT BUSINESS PROPOSAL - STRICTLY CONFIDENTIAL' 'Sun, 08 Nov 2026 04:12:59' 'MO-99182736@freemail.example>' relay.freemail.example > "$M/spam-419"
cat >> "$M/spam-419" <<'B'
Reply-To: mark.okafor.private@freemail2.example
Content-Type: text/plain; charset=us-ascii

Dear Friend,

I am Dr. Mark Okafor, the director of audit in the Federal Ministry of
Finance. I got your contact through a reliable source. During our audit
we discovered an abandoned sum of US$25,500,000.00 (TWENTY FIVE MILLION
FIVE HUNDRED THOUSAND UNITED STATES DOLLARS) in an account belonging to
a foreign contractor who died in a plane crash with his next of kin.

I need your assistance as a foreign partner to transfer this money into
your bank account. You will be entitled to 30% of the total sum. This
transaction is 100% risk free. Please send me your full name, your bank
name and account number and your private telephone number.

Reply strictly confidential to my private email.

Best regards,
Dr. Mark Okafor
B
hdr 'Pharmacy <orders@pharma-direct.example>' 'bob@corp.example>' 'Cheap V1agra & C1alis - 80% OFF - no prescription needed!!!' 'Sat, 07 Nov 2026 23:59:01' 'ph4rm-2817@pharma-direct.example>' 203-0-113-9.dyn.example > "$M/spam-pharma"
cat >> "$M/spam-pharma" <<'B'
Content-Type: text/html; charset=us-ascii

<html><body bgcolor="#ffffff"><center>
<font size="6" color="red"><b>BEST PRICES ON VIAGRA, CIALIS, LEVITRA!!!</b></font><br>
<font size="4">Buy viagra online - no prescription needed - discreet shipping worldwide</font><br>
<a href="http://203.0.113.9/pharm/?id=2817"><img src="http://203.0.113.9/pharm/banner.gif" width="600" height="400"></a><br>
<font size="2">Generic Viagra 100mg x 30 pills $29.95 - Cialis 20mg x 20 pills $39.95</font><br>
<font color="#ffffff" size="1">grape river morning table lantern quiet fence yellow</font>
<a href="http://203.0.113.9/unsubscribe">click here to be removed</a>
</center></body></html>
B
hdr 'International Lottery <claims@lottery-intl.example>' 'alice@corp.example>' 'CONGRATULATIONS!!! YOU HAVE WON 1,000,000.00 EURO' 'Thu, 05 Nov 2026 01:02:03' 'win-00417@lottery-intl.example>' > "$M/spam-lottery"
cat >> "$M/spam-lottery" <<'B'
Content-Type: text/plain; charset=us-ascii

WINNING NOTIFICATION

We are pleased to inform you that your email address has won the sum of
ONE MILLION EURO in our international email lottery program, ticket
number 0071-4471-229. To claim your prize, contact our claims agent with
your full name, address, age, occupation and phone number. A processing
fee of 250 EURO applies. Act now, this offer expires in 48 hours!
B
hdr 'PayPaI Security <security@paypa1-verify.example>' 'carol@corp.example>' 'Your account has been limited - verify your identity now' 'Mon, 09 Nov 2026 17:45:00' 'sec-ve7281@paypa1-verify.example>' 198-51-100-77.dyn.example > "$M/spam-phish"
cat >> "$M/spam-phish" <<'B'
Content-Type: text/html; charset=utf-8

<html><body>
<p>Dear valued customer,</p>
<p>We have noticed unusual activity on your account and it has been
<b>temporarily limited</b>. To restore full access you must verify your
account information within 24 hours or your account will be suspended.</p>
<p><a href="http://198.51.100.77/paypal.com/webscr/login.php?cmd=verify">https://www.paypal.com/verify</a></p>
<p>Please enter your password, credit card number and security code.</p>
<p>Thank you, PayPal Security Department</p>
</body></html>
B
hdr 'Stock Alert <alert@hot-stocks.example>' 'dave@corp.example>' 'THIS STOCK WILL EXPLODE NEXT WEEK - BUY NOW' 'Tue, 10 Nov 2026 06:06:06' 'hs-1111@hot-stocks.example>' > "$M/spam-stock"
cat >> "$M/spam-stock" <<'B'
Content-Type: text/plain; charset=us-ascii

HOT STOCK ALERT!!! SYMBOL: QXPR
CURRENT PRICE: $0.07  TARGET PRICE: $2.50
THIS COMPANY IS ABOUT TO ANNOUNCE A HUGE DEAL. INSIDERS ARE BUYING.
DON'T MISS OUT ON THE OPPORTUNITY OF A LIFETIME. BUY BUY BUY!
This is not investment advice. Information contained herein contains
forward looking statements within the meaning of section 27A.
B
hdr 'Replica Store <sales@lux-replica.example>' 'bob@corp.example>' 'Rolex from $99 - perfect replica watches' 'Wed, 11 Nov 2026 03:33:33' 'rx-20261111@lux-replica.example>' > "$M/spam-replica"
cat >> "$M/spam-replica" <<B
Content-Type: multipart/related; boundary="rrr"

--rrr
Content-Type: text/html; charset=us-ascii

<html><body><a href="http://lux-replica.example/?r=77"><img src="cid:watch01"></a></body></html>
--rrr
Content-Type: image/gif; name="watch.gif"
Content-ID: <watch01>
Content-Transfer-Encoding: base64

$(seq 1 2500 | gzip -n | b64)
--rrr--
B
hdr 'Quick Loans <offers@fast-cash-now.example>' 'alice@corp.example>' 'Pre-approved: $5,000 cash loan, bad credit OK' 'Thu, 12 Nov 2026 12:12:12' 'fc-8812@fast-cash-now.example>' > "$M/spam-loan"
cat >> "$M/spam-loan" <<'B'
Content-Type: text/plain; charset=us-ascii

You have been PRE-APPROVED for a cash loan of up to $5,000!
Bad credit? No credit? No problem! Get your money within 24 hours.
No credit check, no hidden fees, guaranteed approval.
Click here to apply now: http://fast-cash-now.example/apply?id=8812
To be removed from our mailing list reply with REMOVE in the subject.
B
charset "$M/spam-crypto" 'Crypto Profit <invest@coin-profit.example>' 'carol@corp.example>' 'Make $3,000 a day from home with Bitcoin 💰' 'Fri, 13 Nov 2026 19:19:19' 'cp-3000@coin-profit.example>' utf-8 8bit <<'B'
🚀 Join thousands of people earning $3,000 per day with our automated
Bitcoin trading robot! 💰 Guaranteed returns of 300% in 7 days.
Celebrities are using it — banks don't want you to know this secret!
👉 Register now for FREE: http://coin-profit.example/r/3000
Limited places available!!! Act now!!!
B
charset "$M/spam-russian" 'Seminar <info@biz-seminar.example>' 'dave@corp.example>' 'Seminar po nalogam' 'Sat, 14 Nov 2026 09:09:09' 'bs-7777@biz-seminar.example>' koi8-r 8bit <<'B'
СЕМИНАР ДЛЯ БУХГАЛТЕРОВ! ВСЕ ИЗМЕНЕНИЯ НАЛОГОВОГО ЗАКОНОДАТЕЛЬСТВА!
Только один день! Скидка 50% при регистрации сегодня!
Звоните прямо сейчас: +7 495 000-00-00. Количество мест ограничено!
B
charset "$M/spam-chinese" 'Fapiao <fp@invoice-cn.example>' 'alice@corp.example>' 'fapiao' 'Sat, 14 Nov 2026 10:10:10' 'fp-8888@invoice-cn.example>' gb2312 base64 <<'B'
代开各地正规发票，增值税发票，点数优惠！
联系电话：13800000000 刘经理
本公司长期有效，欢迎来电咨询！
B
hdr 'Accounts Payable <ap@supp1ier-billing.example>' 'sales@shop.example>' 'Overdue invoice #88213 - payment required' 'Sun, 15 Nov 2026 02:02:02' 'ap-88213@supp1ier-billing.example>' > "$M/spam-zip"
cat >> "$M/spam-zip" <<B
Content-Type: multipart/mixed; boundary="zipzip"

--zipzip
Content-Type: text/plain; charset=us-ascii

Hello, your invoice is attached. Please open the attached file and pay
immediately to avoid legal action. Invoice is attached as zip.
--zipzip
Content-Type: application/zip; name="Invoice_88213.zip"
Content-Disposition: attachment; filename="Invoice_88213.zip"
Content-Transfer-Encoding: base64

$(printf 'PK\003\004'; seq 1 400 | gzip -n | b64)
--zipzip--
B
RDNS=1
hdr 'Tester <tester@corp.example>' 'alice@corp.example>' 'GTUBE test' 'Mon, 16 Nov 2026 08:00:00' 'gtube-1@corp.example>' > "$M/gtube"
cat >> "$M/gtube" <<'B'
Content-Type: text/plain; charset=us-ascii

This is the GTUBE, the
	Generic
	Test for
	Unsolicited
	Bulk
	Email

XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X
B
# headers only, and a message with no headers at all
hdr 'Monitor <monitor@corp.example>' 'ops@corp.example>' '' 'Mon, 16 Nov 2026 08:05:00' 'mon-empty@corp.example>' > "$M/ham-empty"
printf 'just a line\nwith no headers above it\n' > "$M/noheaders"
# large messages: over spamc's 500 KB default, and a 1.6 MB one
big() {  # big FILE KB SUBJECT
    hdr 'Backup <backup@corp.example>' 'ops@corp.example>' "$3" 'Tue, 17 Nov 2026 03:00:00' "big-$2@corp.example>" > "$1"
    printf 'Content-Type: multipart/mixed; boundary="bigb"\n\n--bigb\nContent-Type: text/plain\n\nNightly report attached.\n--bigb\nContent-Type: application/octet-stream; name="report-%s.tar.gz"\nContent-Transfer-Encoding: base64\n\n' "$2" >> "$1"
    seq 1 $(($2 * 1024 / 6)) | b64 | head -c $(($2 * 1024)) >> "$1"
    printf '\n--bigb--\n' >> "$1"
}
big "$M/big-600k" 600 'Nightly backup report (600 KB)'
big "$M/big-1600k" 1600 'Nightly backup archive (1.6 MB)'
big "$M/big-300k" 300 'Weekly disk usage report'

HAM=(ham-meeting ham-family ham-ci ham-invoice ham-photos news-shop news-digest html-bank
     bounce ham-calendar ham-reset ham-german ham-russian ham-japanese ham-chinese ham-french)
SPAM=(spam-419 spam-pharma spam-lottery spam-phish spam-stock spam-replica spam-loan
      spam-crypto spam-russian spam-chinese spam-zip gtube)
ODD=(ham-empty noheaders big-600k big-300k)
USERS=(alice bob carol@corp.example dave sales@shop.example support postmaster
       ops alice bob mallory j.doe@partner.example)

# --- the daemon -------------------------------------------------------------
SPAMD=/usr/sbin/spamd
start_spamd() {  # start_spamd [extra options]
    bg "$SPAMD" -4 -L -i 127.0.0.1:$P -A 127.0.0.1 -u debian-spamd -g debian-spamd \
        -x --virtual-config-dir="$U/%u" -c -l \
        -C /usr/share/spamassassin --siteconfigpath="$SITE" \
        -s "$LOG" -r "$WORK/spamd.pid" --timeout-tcp=5 --timeout-child=30 \
        -m 4 --min-children=2 --min-spare=1 --max-spare=2 --max-conn-per-child=12 "$@" \
        2>>"$WORK/stderr"
    SPID=$LASTPID
    wait_port $P 60
    sleep 1
}
start_spamd
say "traffic"

SC="spamc -d 127.0.0.1 -p $P -t 30"
sc() { $SC "$@" >/dev/null 2>&1 || true; }
check() {  # check MSG USER: one spamc call in a fixed pseudo-random mode
    f=$M/$1; u=$2
    case $((RANDOM % 14)) in
        0|1|2) sc -u "$u" < "$f" ;;
        3) sc -u "$u" -c < "$f" ;;
        4) sc -u "$u" -R < "$f" ;;
        5) sc -u "$u" -r < "$f" ;;
        6) sc -u "$u" -y < "$f" ;;
        7) sc -u "$u" -E < "$f" ;;
        8) sc -u "$u" --headers < "$f" ;;
        9) sc -u "$u" -z < "$f" ;;
        10) sc -u "$u" -x -c < "$f" ;;
        11) sc < "$f" ;;                       # no -u: the client's own user
        12) sc -u "$u" -s 2000000 < "$f" ;;
        *) sc -u "$u" -l -R < "$f" ;;
    esac
}
learn() {  # learn MSG USER TYPE
    sc -u "$2" -L "$3" < "$M/$1"
}
# pick ARRAY: a pseudo-random element in $PICK (no subshell, so RANDOM stays in step)
pick() { local -n a=$1; PICK=${a[$((RANDOM % ${#a[@]}))]}; }
round() {  # round N: N client operations
    for _ in $(seq 1 "$1"); do
        pick USERS; u=$PICK
        r=$((RANDOM % 24))
        if [ $r -lt 9 ]; then pick HAM; check "$PICK" "$u"
        elif [ $r -lt 15 ]; then pick SPAM; check "$PICK" "$u"
        elif [ $r -lt 16 ]; then pick ODD; check "$PICK" "$u"
        elif [ $r -lt 18 ]; then pick SPAM; learn "$PICK" "$u" spam
        elif [ $r -lt 20 ]; then pick HAM; learn "$PICK" "$u" ham
        elif [ $r -lt 21 ]; then pick HAM; learn "$PICK" "$u" forget
        elif [ $r -lt 22 ]; then pick SPAM; sc -u "$u" -C report < "$M/$PICK"
        elif [ $r -lt 23 ]; then pick HAM; sc -u "$u" -C revoke < "$M/$PICK"
        else sc -K
        fi
    done
}

# --- faults -----------------------------------------------------------------
raw() {  # raw [socat address options] < request: one request on a raw socket
    timeout 8 socat -t 3 - "TCP:127.0.0.1:$P${1-}" >/dev/null 2>&1 || true
}
denied() {  # clients from an address --allowed-ips does not list
    printf 'PING SPAMC/1.5\r\n\r\n' | raw ",bind=127.0.0.2"
    { printf 'CHECK SPAMC/1.5\r\nUser: bob\r\nContent-length: %s\r\n\r\n' "$(wc -c < "$M/spam-loan")"
      cat "$M/spam-loan"; } | raw ",bind=127.0.0.3"
}
junk() {  # malformed and unknown requests
    printf 'GARBAGE\r\n\r\n' | raw
    printf 'CHECK SPAMC/9.9\r\nContent-length: 5\r\n\r\nhello' | raw
    printf 'PROCESS SPAMC/1.5\r\nContent-length: abc\r\n\r\nhello' | raw
    printf 'PROCESS SPAMC/1.5\r\nUser: carol\r\n\r\nSubject: no length\r\n\r\nbody\r\n' | raw
    printf 'SYMBOLS SPAMC/1.5\r\nContent-length: 9999\r\nUser: dave\r\n\r\nSubject: short\r\n\r\nbody\r\n' | raw
    printf 'TELL SPAMC/1.5\r\nUser: alice\r\nMessage-class: maybe\r\nSet: local\r\nContent-length: 16\r\n\r\nSubject: x\r\n\r\nhi' | raw
    printf 'TELL SPAMC/1.5\r\nUser: alice\r\nContent-length: 16\r\n\r\nSubject: x\r\n\r\nhi' | raw
    printf 'HEADERS SPAMC/1.5\r\nUser: bob\r\nCompress: gzip\r\nContent-length: 16\r\n\r\nSubject: x\r\n\r\nhi' | raw
    printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' | raw
    printf '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03' | raw
    printf 'SKIP SPAMC/1.2\r\n\r\n' | raw
    printf 'PING SPAMC/1.5\r\n\r\n' | raw
    printf 'REPORT SPAMC/1.2\r\nUser: ../../etc\r\nContent-length: 16\r\n\r\nSubject: x\r\n\r\nhi' | raw
}
cutoff() {  # a client that disconnects midway, and one that stalls
    { printf 'PROCESS SPAMC/1.5\r\nUser: carol@corp.example\r\nContent-length: 40000\r\n\r\n'
      head -c 3000 "$M/ham-photos"; } | timeout 2 socat -t 0.5 - "TCP:127.0.0.1:$P" >/dev/null 2>&1 || true
    (printf 'CHECK SPAMC/1.5\r\n'; sleep 8) | timeout 9 socat - "TCP:127.0.0.1:$P" >/dev/null 2>&1 &
    STALLED="$STALLED $!"
    (sleep 8) | timeout 9 socat - "TCP:127.0.0.1:$P" >/dev/null 2>&1 &
    STALLED="$STALLED $!"
}
crowd() {  # more simultaneous clients than children
    cp=""
    for i in $(seq 1 "$1"); do
        case $((i % 4)) in
            0) $SC -u ops -s 2000000 < "$M/big-1600k" >/dev/null 2>&1 & ;;
            1) $SC -u bob -R < "$M/spam-pharma" >/dev/null 2>&1 & ;;
            2) $SC -u alice < "$M/ham-photos" >/dev/null 2>&1 & ;;
            *) $SC -u "support" -c < "$M/big-300k" >/dev/null 2>&1 & ;;
        esac
        cp="$cp $!"
    done
    for p in $cp; do wait "$p" || true; done
}
kill_child() {  # a busy child killed with SIGKILL under its client
    $SC -u ops -s 2000000 < "$M/big-1600k" >/dev/null 2>&1 & cp=$!
    sleep 1
    c=$(pgrep -P "$SPID" | head -1)
    [ -n "$c" ] && kill -9 "$c" 2>/dev/null
    wait $cp || true
    sleep 1
}
stop_spamd() { kill "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; sleep 1; }

STALLED=""
# warm up: every user once, then teach Bayes its first messages
for u in "${USERS[@]}"; do sc -u "$u" -c < "$M/ham-meeting"; done
for i in $(seq 0 11); do
    learn "${SPAM[$i]}" alice spam; learn "${HAM[$i]}" alice ham
    learn "${SPAM[$i]}" bob spam; learn "${HAM[$((i + 4))]}" bob ham
done
round 60; round 60
denied; junk
round 50
cutoff
crowd 10
round 50
kill_child
round 40
# a SIGHUP reload
kill -HUP "$SPID"; sleep 1; wait_port $P 60; sleep 2
round 50
junk; denied
round 40
# a second daemon started by mistake on the same port
timeout 40 "$SPAMD" -4 -L -i 127.0.0.1:$P -A 127.0.0.1 -u debian-spamd -x -C /usr/share/spamassassin \
    --siteconfigpath="$SITE" -s "$LOG" -m 2 >/dev/null 2>&1 || true
round 40
# a restart, with a site configuration an admin got wrong
stop_spamd
write_site "required_hits 4.5
bogus_option yes
score NO_SUCH_RULE_AT_ALL 2.0
header LOCAL_BAD_RE Subject =~ /(free|cheap/i
body LOCAL_FREE_MONEY /free money/i
describe LOCAL_UNDEFINED This rule does not exist
loadplugin Mail::SpamAssassin::Plugin::DoesNotExist
use_bayes maybe"
start_spamd --round-robin
round 50
crowd 8
write_site ""
stop_spamd
# the configuration fixed, a short run with Bayes debugging on
start_spamd -D bayes,learn
round 14
stop_spamd
# and back to normal, with timing reports on
start_spamd --timing
round 50
cutoff; junk
kill_child
round 40
for p in $STALLED; do wait "$p" || true; done
stop_spamd
emit spamd "$LOG"
