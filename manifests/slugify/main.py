"""AgentPM tool: a URL slug from a title. JSON on stdin, one JSON object on stdout."""

import json
import os
import re
import sys
import unicodedata

args = json.load(sys.stdin)
separator = os.environ.get("SLUG_SEPARATOR", "-")
ascii_text = unicodedata.normalize("NFKD", args["text"]).encode("ascii", "ignore").decode()
words = re.findall(r"[a-z0-9]+", ascii_text.lower())
if not words:
    error = {"code": "empty_slug", "message": "the text has no letters or digits to keep"}
    print(json.dumps({"ok": False, "error": error}))
else:
    slug = separator.join(words)[: args.get("max_length", 80)].strip(separator)
    print(json.dumps({"ok": True, "slug": slug}))
