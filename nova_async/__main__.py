from nova_async.cli import main

raise SystemExit(main())
