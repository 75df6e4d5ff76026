# SPDX-License-Identifier: ISC
"""What an operator installs (issue 34, section 4): the options every
daemon takes, and what make install puts where.

The paths a build was configured for are read from its Makefile
(make_var), so that the tests hold for any configure, not only for the
default prefix.
"""

import os
import re
import subprocess

from ankusa import SRCDIR, binary, tmpdir
import ankusa


def run(argv, env=None, timeout=60, cwd=None):
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                       env=env, timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def make_var(*names, build=None):
    """The values make gives these variables in the build dir (the
    tests' by default), expanded (${prefix}/etc is /usr/local/etc)."""
    mk = os.path.join(tmpdir(), "print-vars.mk")
    with open(mk, "w") as f:
        f.write("print-%:\n\t@echo '$($*)'\n")
    out = []
    for n in names:
        rc, o, e = run(["make", "-s", "--no-print-directory", "-C",
                        build or ankusa.BUILD, "-f", "Makefile", "-f", mk,
                        "print-" + n], env=clean_make_env())
        assert rc == 0, "make print-%s: exit %d: %s" % (n, rc, e)
        out.append(o.strip())
    return out if len(out) > 1 else out[0]


def clean_make_env():
    """Our environment without a parent make's (the tests may run under
    make check): a make started here is a make of its own."""
    e = dict(os.environ)
    for v in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        e.pop(v, None)
    return e


def package_version():
    with open(os.path.join(SRCDIR, "configure.ac")) as f:
        m = re.search(r"AC_INIT\(\[ankusa\],\s*\[([^]]+)\]", f.read())
    assert m, "configure.ac has no AC_INIT([ankusa], [VERSION])"
    return m.group(1)


def test_help_and_version():
    """-h/--help and -V/--version: exit 0, the usage or the version on
    standard output, as any GNU or BSD daemon; a bad option is a usage
    error (exit 2, the usage on standard error)."""
    version = package_version()
    conf, sock = make_var("sysconfdir", "controlsocket")
    for prog in ("ankusad", "ankusactl"):
        for opt in ("-h", "--help"):
            rc, out, err = run([binary(prog), opt])
            assert rc == 0, "%s %s: exit %d: %s" % (prog, opt, rc, err)
            assert out.startswith("usage: %s " % prog), (prog, opt, out)
            assert err == "", (prog, opt, err)
            # The defaults it names are the configured ones.
            assert sock in out, "%s %s does not name the control " \
                "socket %s:\n%s" % (prog, opt, sock, out)
        for opt in ("-V", "--version"):
            rc, out, err = run([binary(prog), opt])
            assert rc == 0, "%s %s: exit %d: %s" % (prog, opt, rc, err)
            assert out == "%s (ankusa) %s\n" % (prog, version), \
                (prog, opt, out)
            assert err == "", (prog, opt, err)
        rc, out, err = run([binary(prog), "--no-such-option"])
        assert rc == 2, "%s --no-such-option: exit %d" % (prog, rc)
        assert out == "" and "usage: %s " % prog in err, (prog, out, err)
    rc, out, _ = run([binary("ankusad"), "-h"])
    assert os.path.join(conf, "ankusa", "ankusa.yml") in out, out
    # ankusactl's help lists every command it takes.
    rc, out, _ = run([binary("ankusactl"), "-h"])
    for cmd in ("status", "queue", "reload", "drain", "dlq", "show",
                "backup", "api", "flush", "pause", "resume"):
        assert re.search(r"^\t%s\b" % re.escape(cmd), out, re.M), (cmd, out)


# ------------------------------------------------------------ make install

PATH_VARS = ("prefix", "sbindir", "sysconfdir", "pkglibexecdir", "mandir",
             "controlsocket", "systemdsystemunitdir", "initddir",
             "bashcompletiondir")


def build_vars(build):
    return dict(zip(PATH_VARS, make_var(*PATH_VARS, build=build)))


def make(build, *targets, timeout=600):
    rc, out, err = run(["make", "-s", "--no-print-directory", "-C", build]
                       + list(targets), env=clean_make_env(),
                       timeout=timeout)
    assert rc == 0, "make %s: exit %d:\n%s%s" % (" ".join(targets), rc,
                                                 out[-3000:], err[-3000:])
    return out + err


def under(root, path):
    return os.path.join(root, path.lstrip("/"))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


PLACEHOLDER = re.compile(r"@[A-Za-z_][A-Za-z_]*@")


def check_installed(root, v, build):
    """What make install DESTDIR=root put there carries the paths of the
    build's configure v, and the one control socket path."""
    conf = os.path.join(v["sysconfdir"], "ankusa", "ankusa.yml")
    sock = v["controlsocket"]
    texts = {}

    # The sample configuration: the build's, and loadable.
    sample = under(root, conf)
    assert os.path.isfile(sample), "no %s installed" % conf
    texts[conf] = read(sample)
    assert texts[conf] == read(os.path.join(build, "scripts",
                                            "ankusa.yml")), conf
    assert sock in texts[conf] and \
        os.path.join(v["sbindir"], "ankusad") in texts[conf], texts[conf]

    # The man pages: the configured paths, no placeholder left.
    pages = {"man8/ankusad.8": (conf, sock, v["pkglibexecdir"]),
             "man8/ankusactl.8": (sock,),
             "man5/ankusa.yml.5": (conf, sock)}
    for page, want in pages.items():
        p = under(root, os.path.join(v["mandir"], page))
        assert os.path.isfile(p), "no %s installed" % page
        texts[page] = read(p)
        for w in want:
            assert w in texts[page], "%s does not name %s" % (page, w)

    # The unit: the configured programs and file, the one socket path,
    # in the RuntimeDirectory it makes.
    if v["systemdsystemunitdir"]:
        p = under(root, os.path.join(v["systemdsystemunitdir"],
                                     "ankusad.service"))
        unit = texts["ankusad.service"] = read(p)
        assert re.search(r"^ExecStart=%s -d -c %s$" % (
            re.escape(os.path.join(v["sbindir"], "ankusad")),
            re.escape(conf)), unit, re.M), unit
        assert "\nEnvironment=ANKUSA_CONTROL_SOCKET=%s\n" % sock in unit
        assert "\nRuntimeDirectory=ankusa\n" in unit
        assert sock.startswith("/run/ankusa/"), sock

    # The init script, only where it is read; the completion.
    init = under(root, os.path.join(v["initddir"] or "/nowhere", "ankusad"))
    if v["initddir"]:
        assert os.access(init, os.X_OK), "no %s installed" % init
        texts["ankusad.init"] = read(init)
        assert os.path.join(v["sbindir"], "ankusactl") in \
            texts["ankusad.init"]
    for base, dirs, files in os.walk(root):
        for n in files:
            if n == "ankusad" and base.endswith("init.d"):
                assert v["initddir"] and os.path.join(base, n) == init, \
                    "an init script where none is read: %s" % base
    if v["bashcompletiondir"]:
        assert os.path.isfile(under(root, os.path.join(
            v["bashcompletiondir"], "ankusactl")))

    # One socket path: no other control.sock anywhere.
    for name, t in texts.items():
        m = PLACEHOLDER.search(t)
        assert m is None, "%s: %s left" % (name, m.group(0))
        for other in re.findall(r"(?:/[\w.+-]+)+/control\.sock", t):
            assert other == sock, "%s names %s, not %s" % (name, other,
                                                            sock)
    return texts


def test_make_install_destdir():
    """make install DESTDIR=...: the sample configuration (never over an
    existing one, removed by uninstall only as installed), the man pages,
    the unit and the programs with the configured paths and one control
    socket path."""
    build = ankusa.BUILD
    v = build_vars(build)
    root = tmpdir("root")
    make(build, "install", "DESTDIR=" + root)
    check_installed(root, v, build)

    # The installed programs name the same paths.
    sbin = under(root, v["sbindir"])
    conf = os.path.join(v["sysconfdir"], "ankusa", "ankusa.yml")
    rc, out, err = run([os.path.join(sbin, "ankusad"), "-n", "-c",
                        under(root, conf)], env=ankusa.base_env())
    assert rc == 0 and out.startswith("config OK: sources=1 sinks=1"), \
        "the sample: exit %d: %s%s" % (rc, out, err)
    rc, out, _ = run([os.path.join(sbin, "ankusad"), "-M"])
    assert rc == 0 and out == read(under(root, os.path.join(
        v["mandir"], "man5", "ankusa.yml.5"))), \
        "the installed ankusa.yml(5) is not the installed ankusad -M's"
    # ankusactl's own default (no -s, no ANKUSA_CONTROL_SOCKET) is the
    # socket the unit and ankusad use.
    rc, out, err = run([os.path.join(sbin, "ankusactl"), "status"],
                       env=ankusa.base_env())
    if rc == 0:
        ankusa.note("a daemon answers at %s: ankusactl's default path "
                    "taken as reached" % v["controlsocket"])
    else:
        assert rc == 3 and "cannot reach ankusad at %s:" % \
            v["controlsocket"] in err, "ankusactl status: exit %d: %s" % (
                rc, err)

    # An operator's file is never replaced, nor removed by uninstall.
    sample = under(root, conf)
    orig = read(sample)
    with open(sample, "a") as f:
        f.write("# edited by the operator\n")
    out = make(build, "install", "DESTDIR=" + root)
    assert read(sample) == orig + "# edited by the operator\n", \
        "make install replaced an edited ankusa.yml"
    assert "ankusa.yml exists: kept" in out, out
    make(build, "uninstall", "DESTDIR=" + root)
    assert os.path.isfile(sample), "make uninstall removed an edited file"
    assert not os.path.exists(os.path.join(sbin, "ankusad"))
    with open(sample, "w") as f:
        f.write(orig)
    make(build, "uninstall", "DESTDIR=" + root)
    assert not os.path.exists(sample), \
        "make uninstall kept the sample as installed"


test_make_install_destdir.timeout = 600


def test_install_configured_paths():
    """A configure with other paths than the default: what make install
    writes carries those, and nothing of the default prefix."""
    if os.path.exists(os.path.join(SRCDIR, "config.status")):
        raise ankusa.Skip("the source tree is configured in place: a "
                          "second configure needs a clean one")
    build = tmpdir("build2")
    rc, out, err = run([os.path.join(SRCDIR, "configure"), "-q",
                        "--prefix=/opt/ank",
                        "--sysconfdir=/etc/opt/ank",
                        "--with-control-socket=/run/ankusa/ctl.sock",
                        "--with-systemdsystemunitdir=/opt/ank/lib/systemd",
                        "--with-initddir=/etc/opt/ank/init.d",
                        "--with-bashcompletiondir=/opt/ank/completions"],
                       env=clean_make_env(), timeout=300, cwd=build)
    assert rc == 0, "configure: exit %d: %s%s" % (rc, out, err[-3000:])
    # Without compiling: the data files only.
    v = build_vars(build)
    assert v["controlsocket"] == "/run/ankusa/ctl.sock", v
    root = tmpdir("root2")
    make(build, "install-data", "DESTDIR=" + root)
    texts = check_installed(root, v, build)
    for name, t in texts.items():
        assert "/usr/local" not in t, "%s names /usr/local" % name
    assert "/etc/opt/ank/ankusa/ankusa.yml" in texts["man8/ankusad.8"]
    assert "/opt/ank/libexec/ankusa" in texts["man8/ankusad.8"]

    # No socket outside /run/ankusa with the unit; /var/run's without.
    rc, _, err = run([os.path.join(SRCDIR, "configure"), "-q",
                      "--with-control-socket=/var/run/ctl.sock",
                      "--with-systemdsystemunitdir=/lib/systemd/system"],
                     env=clean_make_env(), timeout=300,
                     cwd=tmpdir("build3"))
    assert rc != 0 and "/run/ankusa" in err, (rc, err[-2000:])


test_install_configured_paths.timeout = 600


# --------------------------------------------------------- bash completion

def complete(*words):
    """What ankusactl's bash completion offers for a command line whose
    last word is the one being completed, sorted."""
    script = os.path.join(SRCDIR, "scripts", "bash-completion", "ankusactl")
    prog = ('. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
            '_ankusactl; printf "%s\\n" "${COMPREPLY[@]}"')
    rc, out, err = run(["bash", "--norc", "--noprofile", "-c", prog, "bash",
                        script] + list(words))
    assert rc == 0 and err == "", "bash: exit %d: %s" % (rc, err)
    return sorted(w for w in out.split("\n") if w)


def test_bash_completion():
    """The completion offers ankusactl's commands (exactly those its usage
    lists), options, and the subcommands of dlq, replays, quarantine."""
    # The usage ankusactl prints (with no command: a usage error).
    rc, _, err = run([binary("ankusactl")])
    assert rc == 2 and "commands:\n" in err, (rc, err)
    cmds = sorted(re.findall(r"^\t(\S+)", err.split("commands:\n", 1)[1],
                             re.M))
    assert len(cmds) >= 15, err
    assert complete("ankusactl", "") == cmds
    assert complete("ankusactl", "-j", "-s", "/x.sock", "") == cmds
    assert complete("ankusactl", "d") == ["dead-letter-source", "delete",
                                          "dlq", "drain"]
    assert complete("ankusactl", "-") == ["--help", "--version", "-V", "-h",
                                          "-j", "-s"]
    assert complete("ankusactl", "dlq", "") == ["list", "purge", "replay",
                                                "show"]
    assert complete("ankusactl", "dlq", "replay", "--") == [
        "--max-lag-ms", "--rate", "--since", "--until"]
    assert complete("ankusactl", "replays", "") == ["cancel", "list",
                                                    "pause", "resume",
                                                    "show"]
    assert complete("ankusactl", "quarantine", "re") == ["release"]
    assert complete("ankusactl", "api", "P") == ["PATCH", "POST", "PUT"]
    # Nothing after a command that takes no more.
    assert complete("ankusactl", "status", "") == []


def test_debian_version_is_configures():
    """debian/changelog's version (the package's) is configure.ac's
    AC_INIT version: the .deb is named for the version the daemon says."""
    with open(os.path.join(SRCDIR, "debian", "changelog")) as f:
        m = re.match(r"ankusa \(([^)]+)\) ", f.readline())
    assert m, "debian/changelog does not start with ankusa (VERSION)"
    assert m.group(1) == package_version(), \
        "debian/changelog says %s, configure.ac %s" % (m.group(1),
                                                       package_version())
