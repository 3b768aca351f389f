// Live status while a worker validates: poll the status fragment, reload the
// page when the state moves on. Loaded as a static file: the site's
// Content-Security-Policy allows no inline script.
(function () {
  var script = document.currentScript;
  var url = script && script.dataset.statusUrl;
  var box = document.getElementById("status");
  if (!url || !box) { return; }
  function poll() {
    setTimeout(function () {
      fetch(url, {credentials: "same-origin"})
        .then(function (r) { return r.text(); })
        .then(function (html) {
          var before = box.querySelector("#state").dataset.state;
          box.innerHTML = html;
          if (box.querySelector("#state").dataset.state !== before) { location.reload(); } else { poll(); }
        }).catch(poll);
    }, 1000);
  }
  poll();
})();
