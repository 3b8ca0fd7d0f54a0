package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// printVersion prints the version (set at build time with -ldflags
// "-X main.version=..."; "dev" otherwise), the commit the binary was built
// from and whether the tree had changes, as the Go toolchain recorded
// them, and the Go version.
func printVersion(w io.Writer) {
	commit, modified := "unknown", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (with uncommitted changes)"
				}
			}
		}
	}
	fmt.Fprintf(w, "lockd %s\ncommit %s%s\n%s %s/%s\n", version, commit, modified, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
