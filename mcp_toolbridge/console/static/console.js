// mcp-toolbridge console: keeps the live parts of a page current. Every page works without
// this script; with it, a part marked data-part="URL" data-on="EVENT" is fetched again when
// the server's event stream (/events) says EVENT, and the timeline's filters apply at once.
"use strict";

(function () {
  const base = document.body.dataset.base || "";
  const parts = Array.from(document.querySelectorAll("[data-part]"));
  if (!parts.length) {
    return;
  }

  function query(part) {
    const formId = part.dataset.filters;
    if (!formId) {
      return "";
    }
    const form = document.getElementById(formId);
    const params = new URLSearchParams(new FormData(form));
    for (const [key, value] of Array.from(params.entries())) {
      if (!value) {
        params.delete(key);
      }
    }
    const text = params.toString();
    return text ? "?" + text : "";
  }

  // Refreshes of one part may overlap and their answers arrive in any order: an answer is
  // shown only if no refresh begun after it has been shown already. The part is aria-busy
  // while any of its refreshes is unanswered.
  const begun = new Map();
  const shown = new Map();
  const pending = new Map();

  async function refresh(part) {
    const ticket = (begun.get(part) || 0) + 1;
    begun.set(part, ticket);
    pending.set(part, (pending.get(part) || 0) + 1);
    part.setAttribute("aria-busy", "true");
    try {
      const response = await fetch(part.dataset.part + query(part), {
        credentials: "same-origin",
        headers: { "Accept": "text/html" },
      });
      const html = response.ok ? await response.text() : null;
      if (html !== null && ticket > (shown.get(part) || 0)) {
        shown.set(part, ticket);
        part.innerHTML = html;
        part.dataset.version = String(Number(part.dataset.version || "0") + 1);
      }
    } finally {
      pending.set(part, pending.get(part) - 1);
      if (pending.get(part) === 0) {
        part.removeAttribute("aria-busy");
      }
    }
  }

  for (const part of parts) {
    const formId = part.dataset.filters;
    if (formId) {
      const form = document.getElementById(formId);
      form.addEventListener("change", function () {
        history.replaceState(null, "", form.action + query(part));
        refresh(part);
      });
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        history.replaceState(null, "", form.action + query(part));
        refresh(part);
      });
    }
  }

  const events = new EventSource(base + "/events");
  events.addEventListener("open", function () {
    // The stream reports what changes from the moment it opened: what changed before (since
    // the page was made, or while a stream was down, a server restarted, another replica
    // took over) is fetched once now.
    for (const part of parts) {
      refresh(part);
    }
  });
  const wanted = new Set(parts.map(function (part) { return part.dataset.on; }));
  for (const name of wanted) {
    events.addEventListener(name, function () {
      for (const part of parts) {
        if (part.dataset.on === name) {
          refresh(part);
        }
      }
    });
  }
  events.addEventListener("desk", function (event) {
    const badge = document.querySelector("nav .badge");
    if (badge && !wanted.has("desk")) {
      badge.textContent = "!";
    }
  });
})();
