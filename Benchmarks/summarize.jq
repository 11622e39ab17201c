# summarize.jq - compare.sh's tables from its results (jq -s -r -f summarize.jq results.jsonl).
# Medians over ok runs; where some runs were not noisy (other processes + steal <= NOISE_PCT), only those.
# Brokerless ZeroMQ is measured in the same rounds (peer "zmq"), by the same C client.
def best_peer_latency: {p50: 29.6, p99: 130};

def med: map(select(. != null and . >= 0)) | sort
  | if length == 0 then null elif length % 2 == 1 then .[(length - 1) / 2]
    else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def calm: if any(.[]; .noisy != true) then map(select(.noisy != true)) else . end;
def rate: if . == null then "FAIL" elif . >= 1e6 then "\((. / 1e4 | round) / 100)M"
  elif . >= 1e3 then "\((. / 10 | round) / 100)k" else "\(round)" end;
def us: if . == null then "FAIL" else "\((. * 10 | round) / 10)" end;
def x: if . == null then "-" else "\((. * 100 | round) / 100)x" end;
def div($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;
def met($c): if $c == null then "?" elif $c then "yes" else "**no**" end;

. as $all
| def ok($p; $w): $all | map(select(.peer == $p and .workload == $w and .ok == true)) | calm;
  def r($p; $w): ok($p; $w) | map(.delivery_rate) | med;
  def f($p; $w; $k): ok($p; $w) | map(.[$k]) | med;
  def uds($n; $b): $all | map(select(.peer == "uds_limit" and .workload == "fanout" and .readers == $n and .batch == $b))
    | calm | map(.delivery_rate) | med;
  def runs($p): $all | map(select(.peer == $p and .workload != "idle-connections"));
  def idle($h): $all | map(select(.workload == "idle-connections" and .hello == $h)) | .[0];
  def zmq: {"fanout-1": r("zmq"; "fanout-1"), "fanout-10": r("zmq"; "fanout-10"), "fanout-100": r("zmq"; "fanout-100"),
    "named": r("zmq"; "named")};
  ["fanout-1", "fanout-10", "fanout-100", "named"] as $tput
| "### Medians (deliveries/s; latency in µs)",
  "",
  "| workload | Redis, C client | heraldd, C client | heraldd / Redis | herald-bench (Swift both ends) | herald-bench / Redis | ZeroMQ brokerless, C client | uds_limit 1 write/msg | one-hop reference (relay_limit), C client | heraldd / relay_limit |",
  "|---|---|---|---|---|---|---|---|---|---|",
  ($tput[] as $w
   | "| \($w) | \(r("redis"; $w) | rate) | \(r("herald"; $w) | rate) | \(div(r("herald"; $w); r("redis"; $w)) | x) | "
     + "\(r("herald-bench"; $w) | rate) | \(div(r("herald-bench"; $w); r("redis"; $w)) | x) | \(zmq[$w] | rate) | "
     + "\(if $w == "fanout-1" then uds(1; 1) elif $w == "fanout-10" then uds(10; 1) elif $w == "fanout-100" then uds(100; 1) else null end | if . == null then "-" else rate end) | "
     + "\(r("relay_limit"; $w) | rate) | \(div(r("herald"; $w); r("relay_limit"; $w)) | x) |"),
  "| latency p50 / p99 (10k msg/s, M=10) | \(f("redis"; "latency"; "lat_p50_us") | us) / \(f("redis"; "latency"; "lat_p99_us") | us) | "
    + "\(f("herald"; "latency"; "lat_p50_us") | us) / \(f("herald"; "latency"; "lat_p99_us") | us) | | "
    + "\(f("herald-bench"; "latency"; "lat_p50_us") | us) / \(f("herald-bench"; "latency"; "lat_p99_us") | us) | | "
    + "\(f("zmq"; "latency"; "lat_p50_us") | us) / \(f("zmq"; "latency"; "lat_p99_us") | us) | | "
    + "\(f("relay_limit"; "latency"; "lat_p50_us") | us) / \(f("relay_limit"; "latency"; "lat_p99_us") | us) | |",
  "| herald-bench, consumers on the global pool (`--consumers pool`): fan-out 1 / fan-out 100 | | | | \(r("herald-bench-pool"; "fanout-1") | rate) / \(r("herald-bench-pool"; "fanout-100") | rate) | | | | | |",
  "| herald-bench named with a stream per name (`--streams name`, 1,000 for-awaits) | | | | \(r("herald-bench-per-name"; "named") | rate) | \(div(r("herald-bench-per-name"; "named"); r("redis"; "named")) | x) | \(zmq["named"] | rate) | | | |",
  "| herald-bench with a reader thread per connection (no `ReaderGroup`): fan-out 100 / named | | | | \(r("herald-bench-threads"; "fanout-100") | rate) / \(r("herald-bench-threads"; "named") | rate) | | | | | |",
  "| broker CPU % at fan-out 100 | \(f("redis"; "fanout-100"; "broker_cpu_pct") | us) | \(f("herald"; "fanout-100"; "broker_cpu_pct") | us) | | \(f("herald-bench"; "fanout-100"; "broker_cpu_pct") | us) | | | | \(f("relay_limit"; "fanout-100"; "broker_cpu_pct") | us) | |",
  "",
  "### Issue 6's targets",
  "",
  "| target | measured | ratio | met |",
  "|---|---|---|---|",
  (div(r("herald"; "fanout-1"); uds(1; 1)) as $q
   | "| fan-out 1 within 10 % of uds_limit (1 write per message, same run) | \(r("herald"; "fanout-1") | rate) vs \(uds(1; 1) | rate) | \($q | x) | \(met(if $q then $q >= 0.9 else null end)) |"),
  (("fanout-10", "fanout-100") as $w
   | div(r("herald"; $w); r("redis"; $w)) as $q | div(r("herald"; $w); zmq[$w]) as $z
   | "| \($w): at least 2x Redis | \(r("herald"; $w) | rate) vs \(r("redis"; $w) | rate) | \($q | x) | \(met(if $q then $q >= 2 else null end)) |",
     "| \($w): ahead of brokerless ZeroMQ (\(zmq[$w] | rate), same run) | \(r("herald"; $w) | rate) | \($z | x) | \(met(if $z then $z > 1 else null end)) |"),
  (div(r("herald"; "named"); r("redis"; "named")) as $q | div(r("herald"; "named"); zmq["named"]) as $z
   | "| named: at least 2.5x Redis | \(r("herald"; "named") | rate) vs \(r("redis"; "named") | rate) | \($q | x) | \(met(if $q then $q >= 2.5 else null end)) |",
     "| named: ahead of brokerless ZeroMQ (\(zmq["named"] | rate), same run) | \(r("herald"; "named") | rate) | \($z | x) | \(met(if $z then $z > 1 else null end)) |"),
  (f("herald"; "latency"; "lat_p50_us") as $p | f("redis"; "latency"; "lat_p50_us") as $rp
   | "| latency p50 at most 20 µs, lower than every peer (Redis here \($rp | us), best in issue \(best_peer_latency.p50)) | \($p | us) µs | \(div($p; 20) | x) of target | \(met(if $p then $p <= 20 and $p < ([$rp, best_peer_latency.p50] | map(select(. != null)) | min) else null end)) |"),
  (f("herald"; "latency"; "lat_p99_us") as $p | f("redis"; "latency"; "lat_p99_us") as $rp
   | "| latency p99 at most 100 µs, lower than every peer (Redis here \($rp | us), best in issue \(best_peer_latency.p99)) | \($p | us) µs | \(div($p; 100) | x) of target | \(met(if $p then $p <= 100 and $p < ([$rp, best_peer_latency.p99] | map(select(. != null)) | min) else null end)) |"),
  (runs("herald") as $h
   | "| nothing lost: lost 0 and ok true in every heraldd run | lost \($h | map(.lost // 0) | add), ok \($h | map(select(.ok == true)) | length)/\($h | length) | | \(met(($h | length) > 0 and ($h | all(.ok == true and (.lost // 0) == 0)))) |"),
  (div(r("herald-bench"; "fanout-100"); r("redis"; "fanout-100")) as $q
   | "| herald-bench fan-out 100 at least half of Redis by the C client (same run) | \(r("herald-bench"; "fanout-100") | rate) vs \(r("redis"; "fanout-100") | rate) | \($q | x) | \(met(if $q then $q >= 0.5 else null end)) |"),
  (r("herald-bench"; "fanout-1") as $v
   | "| herald-bench fan-out 1: one for-await consumes at least 1M/s | \($v | rate) | \(div($v; 1e6) | x) | \(met(if $v then $v >= 1e6 else null end)) |"),
  (idle(false), idle(true) | select(. != null)
   | "| idle connection (\(if .hello then "after HELLO" else "connected, no HELLO" end)) at most 16 KiB; \(.connections) under 200 MB | \(.per_connection_bytes) B each; RSS \((.rss_before_kib / 1024 * 10 | round) / 10) → \((.rss_after_kib / 1024 * 10 | round) / 10) MiB | \(div(.per_connection_bytes; 16384) | x) of 16 KiB | \(met(.ok and .per_connection_bytes <= 16384 and .rss_after_kib < 200 * 1024)) |"),
  "",
  "### Issue 19's targets (the Swift stack, herald-bench, against the C client's peers in the same run)",
  "",
  "| target | measured | ratio | met |",
  "|---|---|---|---|",
  (("fanout-1", "named") as $w | div(r("herald-bench"; $w); zmq[$w]) as $q
   | "| herald-bench \($w) at least brokerless ZeroMQ's by the C client\(if $w == "named" then " (a stream per connection)" else "" end) | \(r("herald-bench"; $w) | rate) vs \(zmq[$w] | rate) | \($q | x) | \(met(if $q then $q >= 1 else null end)) |"),
  (div(r("herald-bench-per-name"; "named"); zmq["named"]) as $q
   | "| herald-bench named, a stream per name, against brokerless ZeroMQ's | \(r("herald-bench-per-name"; "named") | rate) vs \(zmq["named"] | rate) | \($q | x) | |"),
  (div(r("herald-bench"; "fanout-100"); r("herald"; "fanout-100")) as $q
   | "| herald-bench fan-out 100 at least 0.8x heraldd's by the C client | \(r("herald-bench"; "fanout-100") | rate) vs \(r("herald"; "fanout-100") | rate) | \($q | x) | \(met(if $q then $q >= 0.8 else null end)) |"),
  (f("herald-bench"; "latency"; "lat_p50_us") as $p50 | f("herald-bench"; "latency"; "lat_p99_us") as $p99
   | f("herald-bench-before"; "latency"; "lat_p50_us") as $b50 | f("herald-bench-before"; "latency"; "lat_p99_us") as $b99
   | "| herald-bench latency p50 / p99 (10k posts/s, 10 subscribers) no worse than the earlier build's (BEFORE_BIN, same rounds) | \($p50 | us) / \($p99 | us) µs vs \($b50 | us) / \($b99 | us) | \(div($p50; $b50) | x) / \(div($p99; $b99) | x) | \(met(if $p50 and $b50 then $p50 <= $b50 and $p99 <= $b99 else null end)) |"),
  (if any($all[]; .peer == "herald-bench-before") then
     ("fanout-1", "fanout-100", "named") as $w | div(r("herald-bench"; $w); r("herald-bench-before"; $w)) as $q
     | "| herald-bench \($w) against the earlier build (BEFORE_BIN, same rounds) | \(r("herald-bench"; $w) | rate) vs \(r("herald-bench-before"; $w) | rate) | \($q | x) | |"
   else empty end),
  (if any($all[]; .peer == "heraldd-before") then
     (("fanout-1", "fanout-10", "fanout-100", "named") as $w | div(r("herald"; $w); r("heraldd-before"; $w)) as $q
      | "| heraldd \($w) by the C client against the earlier build (HERALDD_BEFORE, same rounds) | \(r("herald"; $w) | rate) vs \(r("heraldd-before"; $w) | rate) | \($q | x) | \(met(if $q then $q >= 1 else null end)) |"),
     (f("herald"; "latency"; "lat_p50_us") as $p50 | f("herald"; "latency"; "lat_p99_us") as $p99
      | f("heraldd-before"; "latency"; "lat_p50_us") as $b50 | f("heraldd-before"; "latency"; "lat_p99_us") as $b99
      | "| heraldd latency p50 / p99 by the C client against the earlier build (HERALDD_BEFORE, same rounds) | \($p50 | us) / \($p99 | us) µs vs \($b50 | us) / \($b99 | us) | \(div($p50; $b50) | x) / \(div($p99; $b99) | x) | \(met(if $p50 and $b50 then $p50 <= $b50 and $p99 <= $b99 else null end)) |")
   else empty end),
  (div(r("herald"; "named"); uds(1; 1)) as $q
   | "| heraldd named by the C client at least 0.9x uds_limit (1 write per message) | \(r("herald"; "named") | rate) vs \(uds(1; 1) | rate) | \($q | x) | \(met(if $q then $q >= 0.9 else null end)) |"),
  ((runs("herald-bench") + runs("herald-bench-pool") + runs("herald-bench-per-name") + runs("herald-bench-threads")) as $h
   | "| nothing lost: lost 0 and ok true in every herald-bench run | lost \($h | map(.lost // 0) | add), ok \($h | map(select(.ok == true)) | length)/\($h | length) | | \(met(($h | length) > 0 and ($h | all(.ok == true and (.lost // 0) == 0)))) |"),
  "",
  (r("relay_limit"; "fanout-1") as $f1 | r("relay_limit"; "named") as $n
   | "The one-hop reference (`relay_limit`: one read, one NOTIFY encoded per post, one send per subscriber, heraldd's "
     + "wake-up moderation), under the same client in the same rounds: fan-out 1 \($f1 | rate) (\(div($f1; uds(1; 1)) | x) of "
     + "uds_limit), named \($n | rate) (\(div($n; zmq["named"]) | x) of brokerless ZeroMQ), latency p50 "
     + "\(f("relay_limit"; "latency"; "lat_p50_us") | us) µs. heraldd against it: fan-out 1 \(div(r("herald"; "fanout-1"); $f1) | x), "
     + "named \(div(r("herald"; "named"); $n) | x)."),
  "",
  "Runs: \($all | map(select(.workload != "idle-connections")) | length), noisy (other + steal > 10 % of a core): \($all | map(select(.noisy == true)) | length). ZeroMQ brokerless is measured in the same rounds."
