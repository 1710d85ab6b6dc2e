# The first program of every RUN step of a task image's build (confine-dockerfile.ts): it
# takes CAP_NET_RAW and CAP_NET_ADMIN away for good, then executes the step's own program.
#
#   drop-net-caps PROGRAM [ARG...]     (PROGRAM an absolute path; exit 126 if it cannot)
#
# Static and without libc on purpose: it runs before anything of the task's, so nothing in
# the image (a dynamic loader, libc, LD_PRELOAD from an ENV line, a replaced setpriv) can
# act while the capabilities are still there; the build copies a fresh one in before each
# step. In order:
#   1. no_new_privs: no setuid binary or file capability can hand the capabilities back;
#   2. both dropped from the bounding set (root's steps hold CAP_SETPCAP; others need not:
#      they hold no capability, and 1 keeps it so);
#   3. the ambient set cleared;
#   4. both cleared from the effective, permitted and inheritable sets (root's next exec
#      would otherwise take them from the bounding set, were 2 not allowed);
#   5. execve(argv[1], argv+1, envp).
#
# Rebuilt by (test/attack-build.test.ts checks the embedded bytes match):
#   as drop-net-caps.S -o x.o && ld -static -nostdlib -n -s --build-id=none -o drop-net-caps x.o
.set SYS_write, 1
.set SYS_exit, 60
.set SYS_execve, 59
.set SYS_prctl, 157
.set SYS_capget, 125
.set SYS_capset, 126
.set PR_SET_NO_NEW_PRIVS, 38
.set PR_CAPBSET_DROP, 24
.set PR_CAP_AMBIENT, 47
.set PR_CAP_AMBIENT_CLEAR_ALL, 4
.set CAP_NET_ADMIN, 12
.set CAP_NET_RAW, 13
.set NET_CAPS, (1 << CAP_NET_ADMIN) | (1 << CAP_NET_RAW)
.set CAP_VERSION_3, 0x20080522

.globl _start
.text
_start:
    xor %edx, %edx
    xor %r10d, %r10d
    xor %r8d, %r8d
    # 1
    mov $SYS_prctl, %eax
    mov $PR_SET_NO_NEW_PRIVS, %edi
    mov $1, %esi
    syscall
    test %rax, %rax
    jnz cannot_drop
    # 2 (a failure is answered by 1 and 4)
    mov $SYS_prctl, %eax
    mov $PR_CAPBSET_DROP, %edi
    mov $CAP_NET_RAW, %esi
    syscall
    mov $SYS_prctl, %eax
    mov $PR_CAPBSET_DROP, %edi
    mov $CAP_NET_ADMIN, %esi
    syscall
    # 3 (kernels without ambient sets have none to clear)
    mov $SYS_prctl, %eax
    mov $PR_CAP_AMBIENT, %edi
    mov $PR_CAP_AMBIENT_CLEAR_ALL, %esi
    syscall
    # 4: header {version, pid 0} at (%rsp), data[0] {effective, permitted, inheritable} at 8(%rsp), data[1] after
    sub $32, %rsp
    movl $CAP_VERSION_3, (%rsp)
    movl $0, 4(%rsp)
    mov $SYS_capget, %eax
    mov %rsp, %rdi
    lea 8(%rsp), %rsi
    syscall
    test %rax, %rax
    jnz cannot_drop
    andl $~NET_CAPS, 8(%rsp)
    andl $~NET_CAPS, 12(%rsp)
    andl $~NET_CAPS, 16(%rsp)
    mov $SYS_capset, %eax
    mov %rsp, %rdi
    lea 8(%rsp), %rsi
    syscall
    test %rax, %rax
    jnz cannot_drop
    add $32, %rsp
    # 5: (%rsp) argc, 8(%rsp) argv[0], 16(%rsp) argv[1], envp after argv's NULL
    mov (%rsp), %rcx
    cmp $2, %rcx
    jl cannot_run
    lea 16(%rsp), %rsi
    mov (%rsi), %rdi
    lea 16(%rsp,%rcx,8), %rdx
    mov $SYS_execve, %eax
    syscall
cannot_run:
    lea run_message(%rip), %rsi
    mov $run_length, %edx
    jmp fail
cannot_drop:
    lea drop_message(%rip), %rsi
    mov $drop_length, %edx
fail:
    mov $SYS_write, %eax
    mov $2, %edi
    syscall
    mov $SYS_exit, %eax
    mov $126, %edi
    syscall

drop_message: .ascii "probe build step: cannot drop CAP_NET_RAW and CAP_NET_ADMIN\n"
.set drop_length, . - drop_message
run_message: .ascii "probe build step: cannot execute the step's program\n"
.set run_length, . - run_message
