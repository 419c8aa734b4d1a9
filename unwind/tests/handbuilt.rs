//! Stacks built byte by byte: user registers in perf's numbering for x86_64 and aarch64
//! and a stack copy holding a frame-pointer chain, unwound where no module has unwind
//! rules (anonymous code, so the walk is the frame-pointer one), with each truncation
//! cause produced on purpose; and kernel callchains with their PERF_CONTEXT markers.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use sparkles_perf_data::bytes::U64s;
use sparkles_perf_data::sample::{Regs, StackUser};
use sparkles_perf_data::Sample;
use sparkles_unwind::{split_callchain, Arch, MappedModule, Mappings, Mode, Truncation, Unwinder};

const PID: u32 = 42;
const SP: u64 = 0x7fff_0000_0000;

/// A process that maps anonymous code at 0x400000..0x500000: no module, so no unwind
/// rules and no symbols.
struct AnonymousCode;

impl Mappings for AnonymousCode {
    fn generation(&self, _pid: u32) -> u64 {
        1
    }

    fn executable_modules(&mut self, _pid: u32) -> Vec<MappedModule> {
        Vec::new()
    }

    fn all_mapped(&self, pid: u32, addrs: &mut dyn Iterator<Item = u64>) -> bool {
        pid == PID && Iterator::all(&mut &mut *addrs, |a| (0x40_0000..0x50_0000).contains(&a))
    }

    fn symbol_name(&mut self, _pid: u32, _addr: u64) -> Option<&str> {
        None
    }
}

fn space() -> AnonymousCode {
    AnonymousCode
}

fn words(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A stack copy starting at SP: `(offset, value)` words, the rest zero.
fn stack(len: usize, at: &[(u64, u64)]) -> Vec<u8> {
    let mut s = vec![0u8; len];
    for &(off, v) in at {
        s[off as usize..off as usize + 8].copy_from_slice(&v.to_le_bytes());
    }
    s
}

fn unwind(arch: Arch, mask: u64, regs: &[u8], copy: &[u8], ip: u64) -> sparkles_unwind::Stack {
    let sample = Sample {
        pid: Some(PID),
        tid: Some(PID),
        ip: Some(ip),
        regs_user: Some(Regs {
            abi: 2,
            mask,
            values: U64s(regs),
        }),
        stack_user: Some(StackUser {
            data: copy,
            dyn_size: copy.len() as u64,
        }),
        ..Sample::default()
    };
    Unwinder::new(Mode::Auto, arch).unwind(&mut space(), &sample)
}

fn addrs(s: &sparkles_unwind::Stack) -> Vec<(u64, u64)> {
    s.frames.iter().map(|f| (f.addr, f.lookup)).collect()
}

/// aarch64: x29 (fp) 29, x30 (lr) 30, sp 31, pc 32; all 33 registers recorded.
fn aarch64_regs(pc: u64, lr: u64, sp: u64, fp: u64) -> (u64, Vec<u8>) {
    let mut r = vec![0u64; 33];
    r[29] = fp;
    r[30] = lr;
    r[31] = sp;
    r[32] = pc;
    ((1u64 << 33) - 1, words(&r))
}

#[test]
fn aarch64_frame_records_walk_to_the_root() {
    // AAPCS64 frame records: each function's (fp, lr) pair, fp pointing at it. The leaf's
    // record holds its return address (also still in lr); the root record (the thread's
    // start) holds fp 0.
    let fp1 = SP + 0x20;
    let fp2 = SP + 0x60;
    let fp3 = SP + 0xa0;
    let copy = stack(
        0x100,
        &[
            (0x20, fp2),
            (0x28, 0x40_0200), // leaf's record: return into caller 1
            (0x60, fp3),
            (0x68, 0x40_0300), // caller 1's: return into caller 2
            (0xa0, 0),         // caller 2's record is the root's
            (0xa8, 0),
        ],
    );
    let (mask, regs) = aarch64_regs(0x40_0100, 0x40_0200, SP, fp1);
    let s = unwind(Arch::Aarch64, mask, &regs, &copy, 0x40_0100);
    // The leaf as sampled, then return addresses named at their call (minus one).
    assert_eq!(
        addrs(&s),
        [
            (0x40_0100, 0x40_0100),
            (0x40_0200, 0x40_01ff),
            (0x40_0300, 0x40_02ff)
        ],
        "{s:?}"
    );
    assert_eq!(s.truncated, None, "{s:?}");
}

#[test]
fn aarch64_a_chain_leaving_the_copy_is_a_short_copy() {
    // Caller 1's record lies past the 0x40 bytes copied.
    let copy = stack(0x40, &[(0x20, SP + 0x80), (0x28, 0x40_0200)]);
    let (mask, regs) = aarch64_regs(0x40_0100, 0x40_0200, SP, SP + 0x20);
    let s = unwind(Arch::Aarch64, mask, &regs, &copy, 0x40_0100);
    assert_eq!(s.truncated, Some(Truncation::StackCopyTooShort), "{s:?}");
    assert_eq!(
        addrs(&s),
        [(0x40_0100, 0x40_0100), (0x40_0200, 0x40_01ff)],
        "frames found before the end are kept"
    );
}

/// x86_64: BP 6, SP 7, IP 8 of the usual 0xff0fff mask (20 registers).
fn x86_64_regs(ip: u64, sp: u64, bp: u64) -> (u64, Vec<u8>) {
    let mask = 0xff0fffu64;
    // Registers in mask order: indices 0..=11 then 16..=23.
    let mut r = vec![0u64; 20];
    r[6] = bp;
    r[7] = sp;
    r[8] = ip;
    (mask, words(&r))
}

#[test]
fn x86_64_frame_pointers_walk_and_say_where_they_stop() {
    // push rbp; mov rbp, rsp frames: [bp] = caller's bp, [bp + 8] = return address.
    let bp1 = SP + 0x10;
    let bp2 = SP + 0x40;
    let copy = stack(
        0x80,
        &[(0x10, bp2), (0x18, 0x40_1000), (0x40, 0), (0x48, 0x40_2000)],
    );
    let (mask, regs) = x86_64_regs(0x40_0100, SP, bp1);
    let s = unwind(Arch::X86_64, mask, &regs, &copy, 0x40_0100);
    assert_eq!(
        addrs(&s)[..3],
        [
            (0x40_0100, 0x40_0100),
            (0x40_1000, 0x40_0fff),
            (0x40_2000, 0x40_1fff)
        ],
        "{s:?}"
    );
    assert_eq!(s.truncated, None, "{s:?}");

    // A frame pointer below the stack pointer: the walk would move backwards.
    let (mask, regs) = x86_64_regs(0x40_0100, SP, SP - 0x1000);
    let s = unwind(Arch::X86_64, mask, &regs, &copy, 0x40_0100);
    assert_eq!(s.truncated, Some(Truncation::NotAdvancing), "{s:?}");
    // One far above any stack copy: a corrupt frame, read outside the copy.
    let (mask, regs) = x86_64_regs(0x40_0100, SP, SP + (1 << 30));
    let s = unwind(Arch::X86_64, mask, &regs, &copy, 0x40_0100);
    assert_eq!(s.truncated, Some(Truncation::ReadOutsideStack), "{s:?}");
    // One just past the copy: the copy was too short.
    let (mask, regs) = x86_64_regs(0x40_0100, SP, SP + 0x100);
    let s = unwind(Arch::X86_64, mask, &regs, &copy, 0x40_0100);
    assert_eq!(s.truncated, Some(Truncation::StackCopyTooShort), "{s:?}");

    // A return address in no mapping of the process.
    let copy = stack(0x80, &[(0x10, bp2), (0x18, 0x9000_0000), (0x40, 0)]);
    let (mask, regs) = x86_64_regs(0x40_0100, SP, bp1);
    let s = unwind(Arch::X86_64, mask, &regs, &copy, 0x40_0100);
    assert_eq!(s.truncated, Some(Truncation::AddressInNoMapping), "{s:?}");

    // No registers recorded (abi 0) but a copy: said so.
    let sample = Sample {
        pid: Some(PID),
        ip: Some(0x40_0100),
        regs_user: Some(Regs {
            abi: 0,
            mask: 0,
            values: U64s(&[]),
        }),
        stack_user: Some(StackUser {
            data: &copy,
            dyn_size: copy.len() as u64,
        }),
        ..Sample::default()
    };
    let s = Unwinder::new(Mode::Dwarf, Arch::X86_64).unwind(&mut space(), &sample);
    assert_eq!(s.truncated, Some(Truncation::NoRegisters));
}

#[test]
fn callchain_markers_split_kernel_and_user_frames() {
    let kernel = -128i64 as u64;
    let user = -512i64 as u64;
    let guest = -2048i64 as u64;
    let chain = [
        kernel,
        0xffff_ffff_8100_0010,
        0xffff_ffff_8100_0020,
        user,
        0x40_0100,
        0x40_1000,
        guest,
        0x1234,
    ];
    let (k, u) = split_callchain(chain);
    assert_eq!(k, [0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]);
    assert_eq!(u, [0x40_0100, 0x40_1000], "guest entries dropped");

    // A kernel sample without a stack copy: kernel frames, then the kernel's user walk;
    // the first user frame is the interrupted IP, named as it is.
    let bytes = words(&chain[..6]);
    let sample = Sample {
        pid: Some(PID),
        ip: Some(0xffff_ffff_8100_0010),
        callchain: Some(U64s(&bytes)),
        ..Sample::default()
    };
    let s = Unwinder::new(Mode::Auto, Arch::X86_64).unwind(&mut space(), &sample);
    assert_eq!(
        addrs(&s),
        [
            (0xffff_ffff_8100_0010, 0xffff_ffff_8100_0010),
            (0xffff_ffff_8100_0020, 0xffff_ffff_8100_001f),
            (0x40_0100, 0x40_0100),
            (0x40_1000, 0x40_0fff),
        ]
    );
    assert!(s.frames[..2].iter().all(|f| f.kernel));
    assert_eq!(s.truncated, Some(Truncation::KernelCallchain));
}

#[test]
fn samples_that_cannot_be_walked_keep_their_callchain_and_say_why() {
    let user = -512i64 as u64;
    let chain = words(&[user, 0x40_0100, 0x40_1000]);
    let (mask, regs) = x86_64_regs(0x40_0100, SP, SP + 0x10);
    let copy = stack(0x40, &[]);
    let with = |abi: u64, callchain: bool| Sample {
        pid: Some(PID),
        ip: Some(0x40_0100),
        callchain: callchain.then_some(U64s(&chain)),
        regs_user: Some(Regs {
            abi,
            mask,
            values: U64s(&regs),
        }),
        stack_user: Some(StackUser {
            data: &copy,
            dyn_size: copy.len() as u64,
        }),
        ..Sample::default()
    };
    // An architecture the unwinder does not walk: the kernel's user callchain instead.
    let s = Unwinder::new(Mode::Auto, None).unwind(&mut space(), &with(2, true));
    assert_eq!(addrs(&s), [(0x40_0100, 0x40_0100), (0x40_1000, 0x40_0fff)]);
    assert_eq!(s.truncated, Some(Truncation::KernelCallchain));
    // No callchain either: the sampled IP alone, and the reason.
    let s = Unwinder::new(Mode::Auto, None).unwind(&mut space(), &with(2, false));
    assert_eq!(addrs(&s), [(0x40_0100, 0x40_0100)]);
    assert_eq!(s.truncated, Some(Truncation::UnsupportedArch));
    // A 32-bit task's registers (ABI 1) are not walked as 64-bit ones.
    let s = Unwinder::new(Mode::Auto, Arch::X86_64).unwind(&mut space(), &with(1, false));
    assert_eq!(addrs(&s), [(0x40_0100, 0x40_0100)]);
    assert_eq!(s.truncated, Some(Truncation::NoRegisters));
}
