#!/usr/bin/perl
# The client of a whole call answered by a watch of the tree (bin/jarvis starts it; docs/decisions/warm-client.md):
#   perl warm-call.pl <socket> <working folder> <jarvis's arguments…>
# It sends the call over the tree's socket and prints what comes back (src/warm/protocol.ts, CALL_OP). Whenever the
# watch does not run the call — it declines, speaks another protocol, does not answer within a second, or ends before
# the call's end (it was killed) — this process becomes bin/run.js with the same arguments, and jarvis runs it
# itself. Perl's own builtins only, not even strict and warnings (3 ms of a 10 ms call): Linux's socket constants,
# JSON written by hand; the tests check it under both.
#
# A hook (`hook prompt`, `hook stop`, …) sends what the agent wrote on stdin with the call, and is bounded in time:
# when the watch has not answered within HOOK_SECONDS — plus, for a hook that records the session, the tree's
# sync.lockTimeout, which the watch may spend waiting for the tree lock — the watch is taken to hang and jarvis runs
# the hook itself (a recording hook run twice updates the same episode). A watch that waits for a locked tree answers
# before then: the hook runs once. Whenever jarvis runs a hook itself, it gets the same stdin through a pipe.

my ($socket_path, $cwd, @argv) = @ARGV;
(my $bin = $0) =~ s{/[^/]*\z}{};
# A watch that closes the connection while the call is written must not kill this process: it runs jarvis instead.
$SIG{PIPE} = 'IGNORE';

my $is_hook = @argv && $argv[0] eq 'hook';
# What `jarvis hook` reads (src/hook/input.ts): all of stdin unless it is a terminal, up to its end or 3 seconds.
my $HOOK_STDIN_SECONDS = 3;
# A larger stdin is not sent: jarvis reads it itself.
my $HOOK_STDIN_SENT = 512 * 1024;
my $HOOK_SECONDS = 5;
# The hooks that write the session's episode under the tree lock (src/hook/events.ts, RECORDING_EVENTS).
my $is_recording_hook = $is_hook && @argv > 1 && $argv[1] =~ /\A(?:stop|pre-compact|session-end)\z/;
# sync.lockTimeout's default (src/schemas/nexus.ts), in seconds.
my $LOCK_TIMEOUT_SECONDS = 5;
my $stdin;

sub run_jarvis_here {
  close(SOCKET);
  if (!defined $stdin) {
    exec('node', "$bin/run.js", @argv) or die "jarvis: cannot start node ($!): is Node on your PATH?\n";
  }
  # The stdin this process read, handed on to jarvis as the agent wrote it.
  open(my $pipe, '|-', 'node', "$bin/run.js", @argv) or die "jarvis: cannot start node ($!): is Node on your PATH?\n";
  print $pipe $stdin;
  close($pipe);
  exit($? & 127 ? 128 + ($? & 127) : $? >> 8);
}

sub read_hook_stdin {
  my $read = '';
  return $read if -t STDIN;
  my $until = time + $HOOK_STDIN_SECONDS;
  while ((my $left = $until - time) >= 0) {
    my $ready = '';
    vec($ready, fileno(STDIN), 1) = 1;
    last unless select($ready, undef, undef, $left) > 0;
    my $got = sysread(STDIN, $read, 65536, length $read);
    last unless defined $got && $got > 0;
  }
  return $read;
}

# How long jarvis waits for the tree lock, in seconds: sync.lockTimeout (milliseconds) in the .nexus/config.json of the
# tree, the nearest folder above the working one that holds .memory/ (as bin/jarvis found it); else the default.
sub lock_timeout_seconds {
  my $dir = $cwd;
  $dir =~ s{/[^/]*\z}{} while length $dir && !-d "$dir/.memory";
  open(my $config, '<', "$dir/.nexus/config.json") or return $LOCK_TIMEOUT_SECONDS;
  my $text = do { local $/; <$config> };
  close($config);
  return defined $text && $text =~ /"lockTimeout"\s*:\s*(\d+)/ ? $1 / 1000 : $LOCK_TIMEOUT_SECONDS;
}

sub json_string {
  my ($text) = @_;
  $text =~ s/(["\\])/\\$1/g;
  $text =~ s/([\x00-\x1f\x7f])/sprintf('\\u%04x', ord $1)/ge;
  return "\"$text\"";
}

if ($is_hook) {
  $stdin = read_hook_stdin();
  run_jarvis_here() if length($stdin) > $HOOK_STDIN_SENT;
}
run_jarvis_here() unless $^O eq 'linux' && defined $cwd;
# A socket outside the tree (a tree whose path is too long for one inside it) is trusted only in a folder of this
# user alone, as jarvis's own client trusts it (src/warm/client.ts, isPrivateDir): whoever listens gets the call's
# environment, tokens included.
if ($socket_path !~ m{/\.nexus/[^/]*\z}) {
  (my $folder = $socket_path) =~ s{/[^/]*\z}{};
  my @info = lstat($folder);
  run_jarvis_here() unless @info && -d _ && $info[4] == $< && ($info[2] & 077) == 0;
}
# AF_UNIX and SOCK_STREAM are 1 on Linux; a sockaddr_un is the family then the path.
socket(SOCKET, 1, 1, 0) or run_jarvis_here();
connect(SOCKET, pack('S Z*', 1, $socket_path)) or run_jarvis_here();

my $env = join(',', map { json_string($_) . ':' . json_string($ENV{$_}) } sort keys %ENV);
my $request = '{"v":1,"op":"call","root":"","env":"","input":{'
  . '"argv":[' . join(',', map { json_string($_) } @argv) . '],'
  . '"cwd":' . json_string($cwd) . ','
  . '"env":{' . $env . '},'
  . '"stderrTTY":' . (-t STDERR ? 'true' : 'false')
  . (defined $stdin ? ',"stdin":' . json_string($stdin) : '') . "}}\n";
# A hook's answer is waited for until then; anything else's as long as it takes (a large sync).
my $deadline = $is_hook ? time + $HOOK_SECONDS + ($is_recording_hook ? lock_timeout_seconds() : 0) : undef;
while (length $request) {
  my $written = syswrite(SOCKET, $request);
  run_jarvis_here() unless defined $written;
  substr($request, 0, $written, '');
}

my $received = '';
# More bytes into $received; false at the end of the connection, an error, or when $timeout seconds (or the
# deadline) pass first.
sub receive {
  my ($timeout) = @_;
  if (defined $deadline) {
    my $left = $deadline - time;
    $left = 0 if $left < 0;
    $timeout = $left if !defined $timeout || $left < $timeout;
  }
  if (defined $timeout) {
    my $ready = '';
    vec($ready, fileno(SOCKET), 1) = 1;
    return 0 unless select($ready, undef, undef, $timeout) > 0;
  }
  my $read = sysread(SOCKET, $received, 65536, length $received);
  return defined $read && $read > 0;
}

# One header line, or undef when the connection ends (or the first answer is late) without one.
sub header {
  my ($timeout) = @_;
  while (index($received, "\n") < 0) {
    return undef unless receive($timeout);
  }
  my $end = index($received, "\n");
  my $line = substr($received, 0, $end);
  substr($received, 0, $end + 1, '');
  return $line;
}

sub body {
  my ($bytes) = @_;
  while (length($received) < $bytes) {
    run_jarvis_here() unless receive();
  }
  return substr($received, 0, $bytes, '');
}

sub print_all {
  my ($fd, $text) = @_;
  while (length $text) {
    my $written = syswrite($fd, $text);
    exit 1 unless defined $written;
    substr($text, 0, $written, '');
  }
}

my $first = header(1);
run_jarvis_here() unless defined $first && $first eq 'accepted';
while (defined(my $line = header())) {
  if ($line =~ /\Aerr (\d+)\z/) {
    print_all(\*STDERR, body($1));
  } elsif ($line =~ /\Aexit (\d+) (\d+)\z/) {
    my $code = $1;
    print_all(\*STDOUT, body($2));
    exit $code;
  } else {
    last;
  }
}
run_jarvis_here();
