#!/usr/bin/env bash
# The live view as a student sees it, at 1400×900 in headless Chromium
# driven through chromedriver's WebDriver protocol (issue 39, item 10): the
# page fits the window (nothing scrolls sideways, every host is inside the
# picture), the events are words, the recent MADs of OpenSM's sweep show on
# a page opened after it, and "replay the last sweep" changes the picture.
# Leaves two screenshots in ARTIFACT_DIR (the build's meson-logs).
# usage: web_chromium.sh IBEMU_BINARY [ARTIFACT_DIR]
set -u
ibemu=$1
shots=${2:-$PWD}
. "$(dirname "$0")/lib.sh"
e2e_setup web-chromium
for tool in chromium chromedriver; do
	if ! command -v $tool >/dev/null; then
		echo "web-chromium: needs $tool (tools/install-deps.sh test); skipped"
		exit 77
	fi
done

I=e2e-webc-$$
out=$("$ibemu" up --instance $I --sm --web 2>&1)
expect_eq "up --sm --web" 0 $?
url=$(sed -n 's/^  live view: //p' <<<"$out")
expect_match "prints the page's address" '^http://127\.0\.0\.1:[0-9]+/$' "$url"
# events to show: a lossy cable, then a clean one again
"$ibemu" errors --instance $I ibemu-sw2 8 --drop 0.0001 --seed 1 >/dev/null
"$ibemu" errors --instance $I ibemu-sw2 8 --drop 0 >/dev/null

# --- the page, opened only now: OpenSM's sweep is over
mkdir -p "$shots"
python3 - "$url" "$work" "$shots" >"$work/facts" 2>"$work/driver.err" <<'PYEOF'
import base64, json, os, socket, subprocess, sys, time, urllib.request

url, work, shots = sys.argv[1:4]

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

port = free_port()
driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=open(f"{work}/chromedriver.log", "w"),
                          stderr=subprocess.STDOUT)
base = f"http://127.0.0.1:{port}"

def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)["value"]

def js(session, script):
    return call("POST", f"/session/{session}/execute/sync", {"script": script, "args": []})

def until(session, script, seconds=30):
    end = time.time() + seconds
    while True:
        v = js(session, script)
        if v or time.time() > end:
            return v
        time.sleep(0.2)

def shot(session, name):
    png = base64.b64decode(call("GET", f"/session/{session}/screenshot"))
    path = os.path.join(shots, name)
    open(path, "wb").write(png)
    print(f"screenshot={path}")

session = None
try:
    for _ in range(100):
        try:
            if call("GET", "/status")["ready"]:
                break
        except OSError:
            time.sleep(0.1)
    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            f"--user-data-dir={work}/chromium", "--window-size=1400,900"]
    session = call("POST", "/session", {"capabilities": {"alwaysMatch": {
        "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}})["sessionId"]
    call("POST", f"/session/{session}/url", {"url": url})
    loaded = until(session, "return !!document.querySelector('#map svg') && "
                   "document.querySelectorAll('#mads li').length > 0 && "
                   "document.querySelectorAll('#events li').length > 1")
    print(f"loaded={bool(loaded)}")
    facts = js(session, """
        const map = document.getElementById('map').getBoundingClientRect();
        const hosts = [...document.querySelectorAll('#map g.node')].filter(g => g.querySelector('ellipse'));
        const inside = hosts.filter(g => {
            const r = g.getBoundingClientRect();
            return r.width > 0 && r.left >= map.left && r.right <= map.right && r.top >= map.top &&
                   r.bottom <= map.bottom && r.right <= innerWidth && r.bottom <= innerHeight;
        });
        return { inner: innerWidth + 'x' + innerHeight, scroll_width: document.documentElement.scrollWidth,
                 hosts: hosts.length, hosts_inside: inside.length,
                 mads: document.querySelectorAll('#mads li').length,
                 mad: document.querySelector('#mads li') ? document.querySelector('#mads li').textContent : '',
                 events: document.getElementById('events').innerText,
                 replay: document.getElementById('replay') ? document.getElementById('replay').textContent : '' };
    """)
    for k, v in facts.items():
        print(f"{k}={json.dumps(v) if k == 'events' else v}")
    shot(session, "web-chromium.png")

    # what the daemon replays: the cables it brought up, one by one
    sweep = json.load(urllib.request.urlopen(url + "api/sweep", timeout=30))
    cables = dict(sweep["start"])
    for step in sweep["steps"]:
        cables.update(step.get("cables", {}))
    print(f"sweep_start={' '.join(sorted(set(sweep['start'].values())))}")
    print(f"sweep_end={' '.join(sorted(set(cables.values())))}")
    print(f"sweep_turns={sum(len(step.get('cables', {})) for step in sweep['steps'])} of {len(cables)}")

    # the replay: the cables as the sweep found them, then step by step
    cables = "return [...document.querySelectorAll('#map g.edge')].map(g => g.dataset.state || '').join(' ')"
    before = js(session, cables)
    js(session, "document.getElementById('replay').click()")
    stepped = until(session, "const t = document.getElementById('step').textContent; "
                    "return /^[0-9]+\\/[0-9]+ /.test(t) ? t : ''")
    during = js(session, cables)
    print(f"cables_before={before}")
    print(f"cables_replay={during}")
    print(f"step={stepped}")
    marked = js(session, "return document.querySelectorAll('#map g.node.at').length")
    print(f"marked={marked}")
    shot(session, "web-chromium-replay.png")
    js(session, "document.getElementById('replay').click()")  # stops it
    stopped = js(session, "return document.getElementById('step').textContent")
    print(f"stopped={stopped}")
    print("after=" + until(session, "const c = [...document.querySelectorAll('#map g.edge')]"
                           ".map(g => g.dataset.state || '').join(' '); return c === %s ? c : ''" % json.dumps(before)))
finally:
    if session:
        try:
            call("DELETE", f"/session/{session}")
        except OSError:
            pass
    driver.terminate()
    driver.wait(10)
PYEOF
expect_eq "the driver ran" 0 $?
facts=$(cat "$work/facts")
fact() { sed -n "s/^$1=//p" <<<"$facts"; }
echo "screenshots: $(fact screenshot | tr '\n' ' ')"
expect_eq "the page loaded with its picture, MADs and events" True "$(fact loaded)"
# (a 1400x900 window: 1400 wide inside, less high under the browser's bar)
expect_match "the window is 1400 wide" '^1400x[0-9]+$' "$(fact inner)"
sw=$(fact scroll_width)
expect_eq "nothing scrolls sideways (scrollWidth $sw <= 1400)" 1 "$([ "${sw:-99999}" -le 1400 ] && echo 1)"
expect_eq "the hosts drawn" 4 "$(fact hosts)"
expect_eq "every host inside the picture's box" 4 "$(fact hosts_inside)"
mads=$(fact mads)
expect_eq "recent MADs on a page opened after the sweep" 1 "$([ "${mads:-0}" -gt 0 ] && echo 1)"
expect_match "a MAD in words" '^ibemu-[^ ]+ HCA-1:1 [→←] (Subn|Perf)' "$(fact mad)"
events=$(fact events | python3 -c 'import json, sys; print(json.load(sys.stdin))')
expect_match "the events say what happened" 'errors \(control\) .*node ibemu-sw2' "$events"
expect_eq "no JSON in the events" 0 "$(grep -c '[{}\\]\|"' <<<"$events")"
expect_eq "the replay control" "replay the last sweep" "$(fact replay)"
expect_eq "the sweep found every cable up, not Active" up "$(fact sweep_start)"
expect_eq "and made every one Active" active "$(fact sweep_end)"
expect_eq "each cable turning green once, at its own step" "8 of 8" "$(fact sweep_turns)"
expect_match "the replay starts from the cables the sweep found" '\bup\b' "$(fact cables_replay)"
expect_eq "which is not the picture before" 1 "$([ "$(fact cables_replay)" != "$(fact cables_before)" ] && echo 1)"
expect_match "and says each step" '^[0-9]+/[0-9]+ \+[0-9.]+ s: Subn(Get|Set)\(' "$(fact step)"
expect_eq "the MAD's target marked" 1 "$(fact marked)"
expect_eq "stopping it says so" "replay stopped" "$(fact stopped)"
expect_eq "and the live colours come back" "$(fact cables_before)" "$(fact after)"
if [ "$fail" -ne 0 ]; then
	sed 's/^/    /' "$work/driver.err" | tail -20
fi

e2e_done
