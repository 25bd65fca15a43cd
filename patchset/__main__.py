from patchset.cli import main

raise SystemExit(main())
