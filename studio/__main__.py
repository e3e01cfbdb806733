from studio.cli import main

# The guard matters: glyph rendering uses worker processes (forkserver/spawn), which import
# the main module again; without it each worker would start another studio.
if __name__ == "__main__":
    raise SystemExit(main())
