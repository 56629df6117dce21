// Command tailscope tells a team how to set its timeouts and retries from
// what its own traces show. See `tailscope --help` and the README.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
