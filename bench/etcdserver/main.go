// Command etcd is etcd's server, built from the pinned release in go.mod,
// for `make bench-compare`'s comparison of etcd's v3 API as lockd serves
// it with etcd itself (BENCHMARKS.md). It is etcd's own main, unchanged.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
