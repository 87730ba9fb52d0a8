// The local kubelet's pod sandbox image: a process that holds a pod's namespaces and waits to be
// told to stop, as Kubernetes' own pause image does. Built here, because nothing is pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
