// Package sandbox will confine each plugin process to the box its policy
// gives it: user, pid, net, ipc, uts and mount namespaces, cgroups, rlimits,
// NO_NEW_PRIVS, Landlock, dropped capabilities and a seccomp filter, applied by
// a re-executed stage of plughost before it execs the plugin.
//
// It is empty until the sandbox issue lands; the plugin manager's launcher
// (host/manager, runner.go) is the one place it will hook in. It imports
// nothing of host or pluginproto.
package sandbox
