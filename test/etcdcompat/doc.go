// Package etcdcompat runs etcd's own Go client (go.etcd.io/etcd/client/v3,
// and its concurrency package) against an in-process lockd cluster that
// serves etcd's v3 API (docs/etcd.md). It is a module of its own, like
// bench/compare, so that lockd's module never depends on etcd's client.
package etcdcompat
