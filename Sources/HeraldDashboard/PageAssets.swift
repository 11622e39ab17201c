/// The page's style sheet and script, served inline from the binary: no CDN, no package, nothing fetched.
enum PageAssets {
    static let css = """
        :root { color-scheme: light dark; --accent: #2563eb; --second: #d97706; --line: #8884; }
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; padding: 0 1rem 2rem; max-width: 80rem; }
        header { display: flex; align-items: baseline; gap: 1rem; flex-wrap: wrap; }
        h1 { font-size: 1.4rem; margin: .8rem 0 .4rem; } h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; }
        .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); gap: 0 2rem; }
        table { border-collapse: collapse; width: 100%; }
        caption { text-align: left; font-weight: 600; padding: .2rem 0; }
        th, td { text-align: left; vertical-align: top; padding: .2rem .5rem; border-bottom: 1px solid var(--line); }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        pre { margin: 0; font-size: 12px; white-space: pre-wrap; word-break: break-all; max-height: 12rem;
              overflow: auto; }
        svg { width: 100%; height: 12rem; border: 1px solid var(--line); }
        .axis { display: flex; justify-content: space-between; margin: .1rem 0; font-size: .85rem; opacity: .8; }
        .total { stroke: var(--accent); fill: none; stroke-width: 1.5; }
        .named { stroke: var(--second); fill: none; stroke-width: 1.5; }
        .legend-total { color: var(--accent); } .legend-named { color: var(--second); }
        form.post { display: grid; gap: .4rem; max-width: 36rem; }
        textarea { font: 12px monospace; min-height: 4rem; }
        .state-running { color: #15803d; } .state-failed { color: #b91c1c; }
        #connection { font-size: .9rem; opacity: .8; }
        th.tree { font-weight: normal; white-space: nowrap; } tr.group th { opacity: .7; }
        a.plot-name { text-decoration: none; font-weight: 600; } a.plot-name[aria-current] { font-weight: 700; }
        """

    static let script = """
        (function () {
          "use strict";
          const body = document.body, $ = (id) => document.getElementById(id);
          const token = body.dataset.token, maxPosts = Number(body.dataset.posts), N = 300, W = 600, H = 160;
          let lastPost = Number(body.dataset.lastPost), selected = body.dataset.selected || null;
          let total = JSON.parse(body.dataset.total), named = body.dataset.named ? JSON.parse(body.dataset.named) : null;
          // The lag of a 100 ms timer, measured in the page: how responsive it stays under a flood.
          const lag = { max: 0, last: 0, samples: 0 };
          window.heraldTimerLag = lag;
          let expected = performance.now() + 100;
          setInterval(() => {
            const now = performance.now();
            lag.last = Math.max(0, now - expected); lag.max = Math.max(lag.max, lag.last); lag.samples++;
            expected = now + 100;
          }, 100);
          const q = (extra) => "?token=" + encodeURIComponent(token) + (extra || "");
          const rows = new Map();
          for (const tr of $("names-body").rows) rows.set(tr.dataset.name || tr.dataset.group, tr);
          function el(tag, text, cls) {
            const e = document.createElement(tag);
            if (text !== undefined) e.textContent = text;
            if (cls) e.className = cls;
            return e;
          }
          // The tree's order: segment by segment, a parent before its children.
          function precedes(a, b) {
            const x = a.split("."), y = b.split(".");
            for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] < y[i];
            return x.length < y.length;
          }
          function place(key, tr) {
            let next = null;
            for (const row of $("names-body").rows) {
              if (precedes(key, row.dataset.name || row.dataset.group)) { next = row; break; }
            }
            $("names-body").insertBefore(tr, next);
          }
          function label(name) {
            const segments = name.split("."), depth = segments.length - 1;
            return { depth, last: segments[depth] };
          }
          function groupRow(prefix) {
            const tr = el("tr", undefined, "group"); tr.dataset.group = prefix;
            const th = el("th", label(prefix).last + ".", "tree"); th.scope = "row"; th.colSpan = 5;
            th.style.paddingLeft = (label(prefix).depth + 0.5) + "em"; th.setAttribute("aria-label", prefix);
            tr.appendChild(th);
            return tr;
          }
          function nameRow(name) {
            let tr = rows.get(name);
            if (tr && tr.dataset.name) return tr;
            const group = tr;
            tr = el("tr"); tr.dataset.name = name;
            const th = el("th", undefined, "tree"); th.scope = "row";
            th.style.paddingLeft = (label(name).depth + 0.5) + "em";
            const a = el("a", label(name).last, "plot-name"); a.href = q("&name=" + encodeURIComponent(name));
            a.dataset.name = name; a.setAttribute("aria-label", name); a.title = name;
            th.appendChild(a); tr.appendChild(th);
            const value = el("td"); value.appendChild(el("pre")); tr.appendChild(value);
            tr.appendChild(el("td")); tr.appendChild(el("td", "0", "num")); tr.appendChild(el("td", "", "num"));
            if (group) {
              group.replaceWith(tr);
            } else {
              const segments = name.split(".");
              for (let i = 1; i < segments.length; i++) {
                const prefix = segments.slice(0, i).join(".");
                if (!rows.has(prefix)) { const g = groupRow(prefix); place(prefix, g); rows.set(prefix, g); }
              }
              place(name, tr);
            }
            rows.set(name, tr);
            return tr;
          }
          function pluginRow(p) {
            const tr = el("tr"); tr.dataset.plugin = p.name;
            const th = el("th", p.name); th.scope = "row"; tr.appendChild(th);
            tr.appendChild(el("td", p.state, "state-" + p.state));
            tr.appendChild(el("td", String(p.restarts), "num"));
            tr.appendChild(el("td", p.lastExit || "-"));
            const td = el("td"), form = el("form");
            form.method = "post"; form.action = "/plugin" + q(); form.dataset.js = "";
            const hidden = el("input"); hidden.type = "hidden"; hidden.name = "name"; hidden.value = p.name;
            form.appendChild(hidden);
            for (const action of ["start", "stop", "restart"]) {
              const b = el("button", action); b.type = "submit"; b.name = "action"; b.value = action;
              b.setAttribute("aria-label", action + " " + p.name); form.appendChild(b);
              form.appendChild(document.createTextNode(" "));
            }
            td.appendChild(form); tr.appendChild(td);
            return tr;
          }
          function applyUpdate(u) {
            for (const n of u.names) {
              const tr = nameRow(n.name);
              tr.children[1].firstChild.textContent = n.value === null ? "" : n.value;
              tr.children[2].textContent = n.last || "";
              tr.children[3].textContent = n.rate;
              tr.children[4].textContent = n.subscribers === null ? "" : n.subscribers;
            }
            const posts = $("posts-body");
            for (const p of u.posts) {
              if (p.index <= lastPost) continue;
              lastPost = p.index;
              const tr = el("tr");
              tr.appendChild(el("td", p.time));
              const th = el("th", p.name); th.scope = "row"; tr.appendChild(th);
              const td = el("td"); td.appendChild(el("pre", p.payload)); tr.appendChild(td);
              tr.appendChild(el("td", p.retained ? "yes" : "no"));
              posts.insertBefore(tr, posts.firstChild);
            }
            while (posts.rows.length > maxPosts) posts.deleteRow(-1);
            if (u.plugins) {
              const tb = $("plugins-body"); tb.replaceChildren(...u.plugins.map(pluginRow));
              if (!u.plugins.length) { const tr = el("tr"), td = el("td", "no plugins"); td.colSpan = 5; tr.appendChild(td); tb.appendChild(tr); }
            }
            if (u.bridges) {
              const tb = $("bridges-body");
              tb.replaceChildren(...u.bridges.map((b) => {
                const tr = el("tr"), th = el("th", b.name), td = el("td");
                th.scope = "row"; td.appendChild(el("pre", b.value)); tr.appendChild(th); tr.appendChild(td); return tr;
              }));
              if (!u.bridges.length) { const tr = el("tr"), td = el("td", "no bridge has posted its state"); td.colSpan = 2; tr.appendChild(td); tb.appendChild(tr); }
            }
            if (u.status) {
              $("status-body").replaceChildren(...u.status.map(([k, v]) => {
                const tr = el("tr"), th = el("th", k); th.scope = "row"; tr.appendChild(th); tr.appendChild(el("td", v, "num")); return tr;
              }));
            }
            if (u.notices) $("notices").replaceChildren(...u.notices.map((t) => el("li", t)));
            $("dropped").textContent = u.monitorDropped + " posts missed by the dashboard, " + u.untracked + " posts to names past its limit";
          }
          function points(values, max) {
            return values.map((v, i) => (i * W / (N - 1)).toFixed(1) + "," + (H - 5 - v / max * (H - 15)).toFixed(1)).join(" ");
          }
          function draw() {
            let max = 1;
            for (const v of total) if (v > max) max = v;
            if (named) for (const v of named) if (v > max) max = v;
            $("plot-total").setAttribute("points", points(total, max));
            $("plot-named").setAttribute("points", named ? points(named, max) : "");
            $("plot-max").textContent = String(max);
          }
          let source = null;
          function status(text) { $("connection").textContent = text; }
          function connect() {
            if (source) source.close();
            source = new EventSource("/events" + q("&after=" + lastPost + (selected ? "&name=" + encodeURIComponent(selected) : "")));
            source.addEventListener("update", (e) => applyUpdate(JSON.parse(e.data)));
            source.addEventListener("series", (e) => { const s = JSON.parse(e.data); total = s.total; named = s.named; draw(); });
            source.addEventListener("tick", (e) => {
              const t = JSON.parse(e.data);
              total.push(t.total); total.shift();
              if (named) { named.push(t.selectedCount || 0); named.shift(); }
              for (const [n, r] of Object.entries(t.rates)) { const tr = rows.get(n); if (tr) tr.children[3].textContent = r; }
              draw();
            });
            source.addEventListener("dropped", (e) => {
              status("Live updates stopped: " + JSON.parse(e.data).reason + " Reload the page to resume.");
              source.close();
            });
            source.onopen = () => status("Live");
            source.onerror = () => status("Reconnecting…");
          }
          document.addEventListener("click", (e) => {
            const a = e.target.closest && e.target.closest("a.plot-name");
            if (!a) return;
            e.preventDefault();
            selected = a.dataset.name;
            for (const other of document.querySelectorAll("a.plot-name[aria-current]")) other.removeAttribute("aria-current");
            a.setAttribute("aria-current", "true");
            $("selected-label").textContent = selected;
            history.replaceState(null, "", q("&name=" + encodeURIComponent(selected)));
            connect();
          });
          document.addEventListener("submit", async (e) => {
            const form = e.target;
            if (!form.hasAttribute("data-js")) return;
            e.preventDefault();
            const data = new URLSearchParams(new FormData(form));
            if (e.submitter && e.submitter.name) data.set(e.submitter.name, e.submitter.value);
            try {
              // getAttribute: the plugin forms' buttons are named "action", which hides the form's action property.
              const r = await fetch(form.getAttribute("action"), { method: "POST", body: data, headers: { "Accept": "application/json" } });
              const j = await r.json();
              $("action-result").textContent = j.reason || j.message;
            } catch (err) { $("action-result").textContent = String(err); }
          });
          draw();
          connect();
        })();
        """
}
