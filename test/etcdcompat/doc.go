// Package etcdcompat runs etcd's own Go client (go.etcd.io/etcd/client/v3,
// and its concurrency package) and etcd's etcdctl against two targets in
// the same run: an in-process lockd cluster that serves etcd's v3 API
// (docs/etcd.md), and a real etcd cluster of the release go.mod pins,
// built by the tests from its module (internal/etcdserver). A behaviour in
// which the two differ fails one test of a pair. It is a module of its
// own, like bench/compare, so that lockd's module never depends on etcd.
package etcdcompat
