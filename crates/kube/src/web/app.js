// wasmsched's web view: refreshes the view shown from its fragment every
// two seconds, and switches views without reloading. Without this script
// the page is a snapshot; nothing here changes the cluster.
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
    return "/ui/" + view + "?" + q.toString();
  }

  function refresh() {
    fetch(fragment(), { cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error(r.status + " " + r.statusText);
        return r.text();
      })
      .then(function (html) {
        main.innerHTML = html;
        live.textContent = "live";
        live.className = "ok";
      })
      .catch(function (e) {
        live.textContent = "not updating: " + e.message;
        live.className = "stale";
      });
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
  setInterval(refresh, 2000);
})();
