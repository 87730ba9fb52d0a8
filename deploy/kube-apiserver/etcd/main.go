// etcd built from the same module graph as kube-apiserver (etcd 3.6, matching k8s 1.34).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
