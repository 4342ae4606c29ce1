"""mkctl: minikube-py's kubectl-compatible command line.

Same syntax, flags, output and error messages as kubectl 1.37 for the commands it has
(cli.COMMANDS lists them), so a tutorial's commands and a script's parsing of their
output work unchanged:

    reading      get, describe, explain, api-resources, wait, top, logs, version,
                 config, options, auth can-i
    changing     create, apply, delete, label, annotate, scale, cordon, uncordon, taint,
                 drain, rollout, set image, expose
    into a pod   exec, attach, port-forward
    our own      trace (a request's path through the components)

tests/test_mkctl.py (and test_mkctl_describe.py, and test_mkctl_crd.py on custom
resources) run each command
next to the real kubectl against one server and compare the output line by line;
tests/test_mkctl_write.py does the same for the commands that change objects, each on
twin namespaces.

The modules, in the order a command uses them:

    cli.py          main(): the command table, flag parsing, failures -> kubectl's messages
    command.py      Command (what a command module defines) and Invocation (what it runs with)
    flags.py        pflag's flag syntax                 errors.py   kubectl's error messages
    kubeconfig/     clientcmd: files and their merge (files.py), the chosen context with
                    the flags' overrides (client.py)    tls.py      client certificates, CAs
    transport.py    one HTTP/1.1 connection per command
    discovery.py    the server's resources, cached on disk; names -> resources (RESTMapper)
    builder.py      resource arguments -> requests -> results (cli-runtime's Builder)
    manifests.py    -f files, directories and stdin -> objects, each mapped and placed
    changes.py      what changing commands share: --dry-run, and `web created` lines
    printers/       table (server-side Tables), yaml, json, name, jsonpath, custom-columns,
                    explain (kubectl explain's plaintext, from OpenAPI v3)
    describers/     kubectl describe's text, one module per kind (pod, node, workloads,
                    service)
    goyaml/         YAML as go-yaml v2 writes (and reads) it      gofmt.py   Go's number formats
    commands/       one module per command

Adding a command: write commands/<name>.py defining COMMAND = Command(name, summary,
usage, flags, run), and add its module to cli.COMMANDS. `run(invocation)` reads
`invocation.flags` and `invocation.args`, uses `invocation.namespace()`,
`invocation.client` (REST), `invocation.mapper` (resource names) and builder.py for
resource arguments, writes to `invocation.out`, and raises errors.py's exceptions.

Start-up is most of what a command costs, so everything is imported when first needed:
a `get` imports no YAML library, no asyncio and nothing of the API server.
"""
