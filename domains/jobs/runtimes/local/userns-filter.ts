/**
 * The seccomp filter that keeps a job from making user namespaces, in every mode. bubblewrap's own
 * `--disable-userns` needs `--unshare-user`, which a root gateway cannot use (the job's uid would map to root
 * outside), so the sandbox hands bwrap this classic-BPF program (`--add-seccomp-fd`, the form
 * seccomp_export_bpf(3) writes) and bwrap loads it just before it runs the job. The rules are Flatpak's:
 * `unshare` and `clone` with CLONE_NEWUSER fail with EPERM; `clone3` fails with ENOSYS, since its flags sit in
 * memory a filter cannot read, and C libraries then fall back to `clone`; a system call of another ABI (i386
 * or x32 on x86-64, which could reach the same calls by other numbers) fails with EPERM.
 * Layouts: seccomp(2) (struct seccomp_data), linux/filter.h (struct sock_filter), linux/audit.h (AUDIT_ARCH_*).
 */

/** Per architecture: AUDIT_ARCH_*, the numbers of unshare, clone, clone3, and the first number of a foreign ABI. */
const ARCHES: Record<string, { audit: number; unshare: number; clone: number; clone3: number; foreignFrom?: number }> =
  {
    // arch/x86/entry/syscalls/syscall_64.tbl; x32 calls carry __X32_SYSCALL_BIT.
    x64: { audit: 0xc000003e, unshare: 272, clone: 56, clone3: 435, foreignFrom: 0x40000000 },
    // include/uapi/asm-generic/unistd.h
    arm64: { audit: 0xc00000b7, unshare: 97, clone: 220, clone3: 435 },
    riscv64: { audit: 0xc00000f3, unshare: 97, clone: 220, clone3: 435 },
  };

const CLONE_NEWUSER = 0x10000000;
const EPERM = 1;
const ENOSYS = 38;
const RET_ALLOW = 0x7fff0000;
const retErrno = (errno: number) => 0x00050000 | errno;

// struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (little-endian: low word first).
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;

// BPF opcodes (linux/bpf_common.h).
const LD_W_ABS = 0x00 | 0x00 | 0x20;
const JEQ_K = 0x05 | 0x10;
const JGE_K = 0x05 | 0x30;
const JSET_K = 0x05 | 0x40;
const RET_K = 0x06;

type Target = 'allow' | 'eperm' | 'enosys' | 'flags';
interface Instruction {
  code: number;
  k: number;
  /** Where a true / false test jumps (a named instruction below), or undefined for the next one. */
  yes?: Target;
  no?: Target;
  label?: Target;
}

/** The program for this machine's architecture, or null when there is none for it. */
export function usernsFilter(arch: string = process.arch): Buffer | null {
  const nrs = ARCHES[arch];
  if (!nrs) return null;
  const program: Instruction[] = [
    { code: LD_W_ABS, k: ARCH },
    { code: JEQ_K, k: nrs.audit, no: 'eperm' },
    { code: LD_W_ABS, k: NR },
    ...(nrs.foreignFrom === undefined ? [] : [{ code: JGE_K, k: nrs.foreignFrom, yes: 'eperm' as const }]),
    { code: JEQ_K, k: nrs.clone3, yes: 'enosys' },
    { code: JEQ_K, k: nrs.unshare, yes: 'flags' },
    { code: JEQ_K, k: nrs.clone, yes: 'flags', no: 'allow' },
    { code: LD_W_ABS, k: ARG0_LOW, label: 'flags' },
    { code: JSET_K, k: CLONE_NEWUSER, yes: 'eperm', no: 'allow' },
    { code: RET_K, k: RET_ALLOW, label: 'allow' },
    { code: RET_K, k: retErrno(EPERM), label: 'eperm' },
    { code: RET_K, k: retErrno(ENOSYS), label: 'enosys' },
  ];
  const at = (target: Target) => program.findIndex((i) => i.label === target);
  // struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; }, in host byte order; jumps are relative.
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach((instruction, index) => {
    const jump = (target: Target | undefined) => (target === undefined ? 0 : at(target) - index - 1);
    bytes.writeUInt16LE(instruction.code, index * 8);
    bytes.writeUInt8(jump(instruction.yes), index * 8 + 2);
    bytes.writeUInt8(jump(instruction.no), index * 8 + 3);
    bytes.writeUInt32LE(instruction.k >>> 0, index * 8 + 4);
  });
  return bytes;
}
