"""The web locked tools: web_fetch (pinned GETs, SSRF address policy, HTML to Markdown) and
web_search (providers)."""
