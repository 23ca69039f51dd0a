from mcp_toolbridge.cli import main

raise SystemExit(main())
