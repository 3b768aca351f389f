from benchpack.cli import main

raise SystemExit(main())
