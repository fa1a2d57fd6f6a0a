// plughost console: keeps the page current. The host sends an event on
// /console/events when a plugin loads, stops, dies or is held; on each,
// this script refetches the page it shows and puts the fresh page's
// <main> in place of this one's. The fetched document is parsed with
// DOMParser (no script of it runs) and never evaluated; reconnecting
// after a dropped stream is EventSource's own.
"use strict";
(function () {
  const main = document.getElementById("main");
  if (!main || !main.hasAttribute("data-live") || !("EventSource" in window)) {
    return; // not signed in, or an old browser: the page stays as it is
  }

  let busy = false;
  let again = false;

  // refresh refetches this page once at a time; events that come while
  // it runs make one more refresh after it, not one each.
  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    // Someone typing in a form (the catalog's caller): leave it alone.
    const active = document.activeElement;
    if (active && main.contains(active) && active.matches("input, textarea, select")) {
      return;
    }
    busy = true;
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin",
        cache: "no-store",
        headers: { Accept: "text/html" },
      });
      // Signed out (sent to the login page) or an error page: keep what
      // is shown rather than replace it with something else.
      if (!response.ok || response.redirected) {
        return;
      }
      const fresh = new DOMParser()
        .parseFromString(await response.text(), "text/html")
        .getElementById("main");
      if (fresh) {
        // The spread takes the nodes before any moves (childNodes is
        // live); replaceChildren adopts them into this document.
        main.replaceChildren(...fresh.childNodes);
      }
    } catch (err) {
      // The host is unreachable: the next event (after EventSource
      // reconnects) tries again.
    } finally {
      busy = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  }

  const events = new EventSource("/console/events");
  events.addEventListener("plugin", refresh);
  // A change between this page's rendering and the stream's opening (or
  // while it was down, before EventSource reconnected) came as no event:
  // each opening refetches once.
  events.addEventListener("open", refresh);
})();
