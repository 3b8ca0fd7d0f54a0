// Command etcdserver is etcd's own server, go.etcd.io/etcd/server/v3's
// etcdmain at the version go.mod pins: the tests build it and run a real
// etcd cluster beside lockd's, so that every client test runs against
// both.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
