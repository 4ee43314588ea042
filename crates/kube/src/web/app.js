// wasmsched's web view: refreshes the view shown from its fragment every
// two seconds (a decision, once explained, is not refreshed), sorts
// tables by a click on a column, and switches views without reloading.
// Without this script the page is a snapshot; nothing here changes the
// cluster.
(function () {
  "use strict";
  var main = document.getElementById("main");
  var live = document.getElementById("live");
  var params = new URLSearchParams(location.search);
  var view = document.body.getAttribute("data-view") || "cluster";

  function fragment() {
    var q = new URLSearchParams();
    if (view === "cluster") {
      q.set("page", params.get("page") || "0");
      q.set("filter", params.get("filter") || "");
    }
    if (view === "cluster" || view === "queue" || view === "decisions") {
      q.set("profile", params.get("profile") || "");
    }
    if (view === "decision") {
      q.set("pod", params.get("pod") || "");
    }
    return "/ui/" + view + "?" + q.toString();
  }

  // Sorts a table.sortable by the column clicked (numbers as numbers;
  // again: the other way).
  function sortable() {
    document.querySelectorAll("table.sortable th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = th.closest("table").tBodies[0];
        var down = th.getAttribute("data-sorted") !== "down";
        th.closest("tr").querySelectorAll("th").forEach(function (o) { o.removeAttribute("data-sorted"); });
        th.setAttribute("data-sorted", down ? "down" : "up");
        var num = th.classList.contains("num");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].textContent.trim(), y = b.cells[col].textContent.trim();
          var c = num ? (parseFloat(x) || -Infinity) - (parseFloat(y) || -Infinity) : x.localeCompare(y);
          return down ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  function refresh() {
    // A decision shown stays as it is; one the scheduler is still
    // deciding is asked for again until it is there.
    if (view === "decision" && document.querySelector("section.decision[data-pod]")) return;
    fetch(fragment(), { cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error(r.status + " " + r.statusText);
        return r.text();
      })
      .then(function (html) {
        main.innerHTML = html;
        sortable();
        live.textContent = "live";
        live.className = "ok";
      })
      .catch(function (e) {
        live.textContent = "not updating: " + e.message;
        live.className = "stale";
      });
  }

  // A report (simulate --html) is one file: its tabs show one view at a
  // time, its tiles are filtered in place, and nothing is fetched.
  if (document.body.hasAttribute("data-report")) {
    var show = function (name) {
      document.querySelectorAll("main > [data-view]").forEach(function (s) {
        s.classList.toggle("shown", s.getAttribute("data-view") === name);
      });
      document.querySelectorAll("a.tab").forEach(function (t) {
        t.classList.toggle("active", t.getAttribute("data-tab") === name);
      });
    };
    document.body.classList.add("js");
    document.querySelectorAll("a.tab").forEach(function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        show(a.getAttribute("data-tab"));
      });
    });
    var filter = document.getElementById("tile-filter");
    if (filter) {
      filter.addEventListener("input", function () {
        var f = filter.value.trim();
        document.querySelectorAll(".tile").forEach(function (t) {
          var hit = !f;
          if (!hit && f.indexOf("=") > 0) {
            hit = (" " + (t.getAttribute("data-labels") || "") + " ").indexOf(" " + f + " ") >= 0;
          } else if (!hit) {
            hit = t.querySelector(".name").textContent.indexOf(f) >= 0 ||
              t.querySelector(".zone").textContent.indexOf(f) >= 0;
          }
          t.style.display = hit ? "" : "none";
        });
      });
    }
    if (location.hash.indexOf("#decision-") === 0) {
      show("decisions");
      var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) target.scrollIntoView();
    } else {
      show("cluster");
    }
    sortable();
    return;
  }

  document.querySelectorAll("a.tab").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      view = a.getAttribute("data-tab");
      document.body.setAttribute("data-view", view);
      document.querySelectorAll("a.tab").forEach(function (t) {
        t.classList.toggle("active", t === a);
      });
      params = new URLSearchParams("view=" + view);
      history.replaceState(null, "", "/ui?view=" + view);
      refresh();
    });
  });
  sortable();
  setInterval(refresh, 2000);
})();
