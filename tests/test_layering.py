"""The package layering rules of the project, enforced on every module's imports.

Every package installs as `rocketmq_emulator.<folder>`; inside the project, imports name that package (or
are relative). The layers, lowest first:

    native        the optional C twins of the send path's hottest steps (imports nothing of the project)
    protocol      the codec (sans-IO: no asyncio, sockets, files, processes or argparse) and transport.py,
                  the one asyncio module, shared by broker and client
    store         the message store (no network)
    broker        name server and broker (protocol, store)
    client        the asyncio client (protocol only)
    spark_tools   the Spark data source and the seed job (client; the only pyspark user)
    cli           the `rocketmq-emulator` command line: one argparse tree over broker, client, spark_tools
    testing       test support and the pytest plugin (broker, client)

Nothing imports `cli` or `testing` but themselves (`testing` starts the command line as a process). A project
module named in a string (`python -m ...`, a table of module names) counts as imported, and no package imports
a module by its absolute name at run time (`importlib.import_module("rocketmq_emulator...")`) but `cli`: a
reach upwards cannot hide from these checks. Tests, integration tests and benchmarks import no test module and
no conftest.py: shared helpers live in `testing/` (or a support module such as integration_tests/cppclient.py),
fixtures in conftest.py files.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("native", "broker", "client", "protocol", "store", "spark_tools", "cli", "testing")
#: every tree of the project's own Python files (never build/, .venv/ or other copies)
SOURCE_TREES = (*PACKAGES, "tests", "integration_tests", "benchmarks")
IO = {"asyncio", "socket", "selectors", "uvloop", "aiofiles"}
#: what the codec leaves to the layers above it: files and processes, threads, the command line
NOT_CODEC = {"os", "sys", "subprocess", "threading", "argparse", "tempfile", "shutil"}
#: the layers above broker, client and spark_tools, which nothing below imports
TOP = {"cli", "testing"}

# package -> what it must never import: project packages (by their folder name) and third-party modules
FORBIDDEN = {
    "native": IO | TOP | {"protocol", "store", "broker", "client", "spark_tools", "pyspark"},
    "protocol": IO | NOT_CODEC | TOP | {"store", "broker", "client", "spark_tools", "pyspark"},
    "store": IO - {"aiofiles"} | TOP | {"broker", "client", "spark_tools", "pyspark"},
    "broker": TOP | {"client", "spark_tools", "pyspark"},
    "client": TOP | {"broker", "store", "spark_tools", "pyspark"},
    "spark_tools": TOP | {"broker", "store"},
    "cli": {"testing", "pyspark"},
    "testing": {"cli", "spark_tools", "pyspark"},
}
#: the one asyncio module of protocol/: the transport that broker and client share (RocketMQ's remoting)
TRANSPORT_MODULES = {"protocol/transport.py"}
#: package -> project packages it may name in a string without importing them: processes it starts
STARTS = {"testing": {"cli"}}


def imported_names(path: Path) -> set[str]:
    """Top-level modules imported, with the project's packages named by folder (`rocketmq_emulator.store` ->
    `store`; a relative import is resolved against the file's package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = list(path.relative_to(ROOT).parent.parts)
    names: set[str] = set()

    def add(dotted: str) -> None:
        parts = dotted.split(".")
        if parts[0] == "rocketmq_emulator" and len(parts) > 1:
            names.add(parts[1])
        else:
            names.add(parts[0])

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                add(node.module)
            elif node.level:
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                if target:
                    names.add(target[0])
    return names


def project_files():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_layers(package):
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        forbidden = FORBIDDEN[package] - (IO if rel in TRANSPORT_MODULES else set())
        bad = imported_names(path) & forbidden
        if bad:
            offenders[rel] = sorted(bad)
    assert not offenders, f"layering violated: {offenders}"


def test_no_module_imports_a_top_level_project_name():
    """`import client` would load a second copy of the package beside `rocketmq_emulator.client`."""
    offenders = []
    for tree_root in SOURCE_TREES:
        for path in sorted((ROOT / tree_root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                        else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                        else [])
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {m}" for m in mods
                              if m.split(".")[0] in PACKAGES]
    assert not offenders, offenders


def test_only_spark_tools_imports_pyspark():
    """(The project's own trees only: a `pip wheel .` leaves copies of the packages under build/.)"""
    for tree_root in SOURCE_TREES:
        for path in (ROOT / tree_root).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if rel.parts[0] != "spark_tools":
                assert "pyspark" not in imported_names(path), f"{rel} imports pyspark"


#: packages whose modules must not import each other in a cycle. In broker/, the controller builds the handlers
#: and services, which are typed against broker_context.BrokerContext / broker_state.BrokerState, never the
#: controller.
ACYCLIC_PACKAGES = ("protocol", "store", "client", "broker")


def module_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Project module -> the project modules it imports, from every `import`/`from` statement (those under
    `if TYPE_CHECKING:` and inside functions included: a deferred import hides a cycle, it does not remove it).
    `from . import x` counts as importing the module `x` when it is one, else the package."""
    modules = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def resolve(name: str) -> str | None:
        name = name.removeprefix("rocketmq_emulator.")
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                base = base.removeprefix("rocketmq_emulator.")
                targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        graph[module] = {t for t in map(resolve, targets) if t is not None and t != module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_import_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", ACYCLIC_PACKAGES)
def test_no_import_cycles(package):
    """A module that needs a type from a module that imports it takes a Protocol of what it uses instead (as
    `client/api.py` takes the instance's connections, not the instance)."""
    cycles = [c for c in import_cycles(module_graph(ACYCLIC_PACKAGES)) if c[0].split(".")[0] == package]
    assert not cycles, f"import cycles: {cycles}"


def test_the_broker_controller_is_imported_by_nothing_it_builds():
    """Handlers (those the controller imports on their first request included, which no import statement shows)
    and everything the controller imports take `BrokerContext` / `BrokerState`, never the controller."""
    graph = module_graph(("broker",))
    below, todo = set(), ["broker.controller"]
    while todo:
        for target in graph[todo.pop()] - below:
            below.add(target)
            todo.append(target)
    below |= {m for m in graph if m.startswith("broker.handlers.")}
    offenders = sorted(m for m in below if "broker.controller" in graph[m])
    assert not offenders, f"import broker/controller.py: {offenders}"


#: the push consumer's collaborators take a ConsumerContext and callbacks, never the PushConsumer facade
CONSUMER_COLLABORATORS = ("client/rebalance.py", "client/pull_service.py", "client/pull_from_where.py",
                          "client/consume_service.py", "client/consume_orderly.py", "client/consume_iterator.py",
                          "client/remoting_processor.py", "client/consumer_requests.py", "client/consumer_context.py")


@pytest.mark.parametrize("rel", CONSUMER_COLLABORATORS)
def test_push_consumer_collaborators_do_not_know_the_facade(rel):
    tree = ast.parse((ROOT / rel).read_text())
    imports = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imports.add(node.module or "")
    assert not {m for m in imports if m.endswith("push_consumer")}, f"{rel} imports push_consumer"
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    annotations = {ast.unparse(n.annotation) for n in ast.walk(tree) if isinstance(n, ast.arg) and n.annotation}
    assert "PushConsumer" not in names and not any("PushConsumer" in a for a in annotations), rel


# -- modules named in strings, imports by name ----------------------------------------------------------------
_MODULE_NAME = re.compile(r"rocketmq_emulator\.(\w+)(?:\.\w+)*")


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def named_packages(path: Path) -> dict[str, int]:
    """Project packages named by a string of the code (a whole string that is a module name, such as
    `"rocketmq_emulator.client.cli"` in a table or after `-m`; docstrings left out) -> the line naming it."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            m = _MODULE_NAME.fullmatch(node.value.strip())
            if m and m.group(1) in PACKAGES:
                found.setdefault(m.group(1), node.lineno)
    return found


def by_name_imports(path: Path) -> list[str]:
    """`import_module(...)` / `__import__(...)` calls whose module argument spells an absolute project name
    (`"rocketmq_emulator.x"`, or an f-string starting so): where and what."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if func not in ("import_module", "__import__", "run_module", "find_spec"):
            continue
        arg = node.args[0]
        texts = [arg.value] if isinstance(arg, ast.Constant) else \
            [v.value for v in arg.values if isinstance(v, ast.Constant)] if isinstance(arg, ast.JoinedStr) else []
        if any(isinstance(t, str) and "rocketmq_emulator" in t for t in texts):
            out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno} "
                       f"{ast.unparse(node)}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_modules_named_in_strings_respect_layers(package):
    """A module run by name (`python -m`, a table of modules to import) is an import the import checks would
    not see: it must be one the package may import."""
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = {name: line for name, line in named_packages(path).items()
               if name in FORBIDDEN[package] - STARTS.get(package, set())}
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert not offenders, f"layering violated through module names: {offenders}"


def test_only_the_command_line_imports_project_modules_by_name():
    """Inside a package, deferred imports are `import` statements (which the checks above read) or relative to
    the package itself; only the command line, at the top, may choose a project module by its name."""
    offenders = [hit for package in PACKAGES if package != "cli" for path in sorted((ROOT / package).rglob("*.py"))
                 for hit in by_name_imports(path)]
    assert not offenders, offenders


def test_the_string_checks_see_a_hidden_reach(tmp_path):
    """The two checks above on a module that reaches the client by name, as broker/cli.py once did."""
    path = tmp_path / "reach.py"
    path.write_text('import importlib\n"""doc naming rocketmq_emulator.client"""\n'
                    'MODULES = {"admin": "rocketmq_emulator.client.cli"}\n'
                    'main = importlib.import_module(f"rocketmq_emulator.{MODULES}").main\n')
    assert named_packages(path) == {"client": 3}
    assert by_name_imports(path) == [f"{path}:4 importlib.import_module(f'rocketmq_emulator.{{MODULES}}')"]


# -- test code ------------------------------------------------------------------------------------------------
TEST_TREES = ("tests", "integration_tests", "benchmarks")


def test_code_imports_no_test_module_and_no_conftest():
    """A helper two test modules share lives in testing/ (or a support module beside the tests), a fixture in a
    conftest.py; importing a test module runs its module-level code and hides what is shared."""
    offenders = []
    for tree_root in TEST_TREES:
        for path in sorted((ROOT / tree_root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = "." * node.level + (node.module or "")
                    names = [base] + [f"{base}.{a.name}" for a in node.names if not node.module]
                else:
                    continue
                for name in names:
                    last = name.rstrip(".").rpartition(".")[2]
                    if last.startswith("test_") or last == "conftest" or name.split(".")[0] == "tests":
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert not offenders, offenders


#: the broker's fronts: the remoting request handlers, the 5.x gRPC endpoint and the dashboard. Each translates
#: to the cores below it (the send and consume cores, the POP core, the managers, ...); none imports another
#: front, so a rule two fronts share lives in a core both import.
FRONTS = ("broker.handlers", "broker.grpc", "broker.dashboard")
#: the composition roots that build fronts: the broker (its handlers) and the process (gRPC, dashboard)
ROOTS = ("broker.controller", "broker.emulator")


def _front(module: str) -> str | None:
    return next((f for f in FRONTS if module == f or module.startswith(f + ".")), None)


def test_no_broker_front_imports_another():
    graph = module_graph(("broker",))
    offenders = sorted((m, t) for m, targets in graph.items() for t in targets
                       if _front(m) is not None and _front(t) not in (None, _front(m)))
    assert not offenders, f"a front imports another front: {offenders}"


def test_cores_never_import_fronts_and_only_the_controller_imports_handlers():
    graph = module_graph(("broker",))
    offenders = sorted((m, t) for m, targets in graph.items() for t in targets
                       if _front(m) is None and _front(t) is not None and m not in ROOTS)
    assert not offenders, f"a core imports a front: {offenders}"
    handler_users = sorted(m for m, targets in graph.items()
                           if any(_front(t) == "broker.handlers" for t in targets)
                           and _front(m) != "broker.handlers" and m != "broker.controller")
    assert not handler_users, f"handlers imported elsewhere than by the controller: {handler_users}"


def test_every_request_the_broker_sends_a_client_goes_through_broker2client():
    """As Java's Broker2Client: one module knows how the broker calls its clients (resets, status, NOTIFY,
    CHECK_TRANSACTION_STATE, reply pushes, calls passed on to a consumer); the others ask it. Its twin, as
    Java's BrokerOuterAPI, is broker/outer_api.py: the broker's requests to its name servers and its master."""
    root = Path(__file__).resolve().parents[1] / "broker"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.name in ("broker2client.py", "outer_api.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("invoke", "invoke_oneway"):
                offenders.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert not offenders, f"requests to clients outside broker/core/broker2client.py: {offenders}"


#: broker/ laid out by floor (README "How the code is laid out"), top to bottom: the process level (broker/*.py:
#: the Emulator, the controller of one broker, the name server, the wire trace, ...), the fronts (handlers/, grpc/,
#: dashboard/), the per-broker cores (core/) and the state they keep (state/). The configuration, read once into
#: frozen objects, is read by every floor.
CONFIGURATION = {"broker.config", "broker.settings", "broker.setting_values", "broker.config_keys", "broker.clock"}
FLOORS = {"state": 0, "core": 1, "front": 2, "process": 3}


def _floor(module: str) -> str | None:
    if not module.startswith("broker") or module in CONFIGURATION:
        return None
    if _front(module) is not None:
        return "front"
    part = module.split(".")[1] if "." in module else ""
    return part if part in ("core", "state") else "process"


def test_broker_floors_import_only_downwards():
    """State imports no core, cores import no front, nothing below the process level imports the Emulator, the
    controller or the other process-wide modules: a lower floor that needs something of a higher one takes a
    Protocol of it (core/broker_context.py, core/broker_state.py)."""
    graph = module_graph(("broker",))
    offenders = sorted((m, t) for m, targets in graph.items() for t in targets
                       if _floor(m) is not None and _floor(t) is not None and FLOORS[_floor(t)] > FLOORS[_floor(m)])
    assert not offenders, f"a lower floor imports a higher one: {offenders}"
    assert {_floor(m) for m in graph} == {None, "state", "core", "front", "process"}  # every floor is there


def test_the_floor_rule_sees_an_upward_import():
    assert _floor("broker.state.consumer_offset") == "state" and _floor("broker.core.pop.service") == "core"
    assert _floor("broker.grpc.routes") == "front" and _floor("broker.emulator") == "process"
    assert _floor("broker.settings") is None
    assert FLOORS[_floor("broker.core.send_core")] > FLOORS[_floor("broker.state.stats")]
