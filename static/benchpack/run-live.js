// Live run request page: poll the fragment once a second until the run and its
// submission have settled (no inline script: the site's CSP forbids it).
(function () {
  var box = document.getElementById("live");
  if (!box || box.dataset.settled) { return; }
  function poll() {
    fetch(box.dataset.liveUrl, {credentials: "same-origin"})
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (html) {
        var open = box.querySelector("details") && box.querySelector("details").open;
        box.innerHTML = html;
        var details = box.querySelector("details");
        if (details && open) { details.open = true; }
        var live = box.querySelector(".run-live");
        if (live && live.dataset.settled) { location.reload(); } else { setTimeout(poll, 1000); }
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 1000);
})();
