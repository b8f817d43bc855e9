// A force-feedback device made with uinput, for the haptics VM test. It answers the kernel's
// upload and erase requests as a driver would and records, one line each with the kernel's
// CLOCK_MONOTONIC stamp of the event in microseconds, every upload, erase, play, stop and gain.
// With the capability "leds" it also declares keyboard LEDs (EV_LED: num, caps and scroll lock),
// for which the kernel's input-leds makes LED class devices (inputN::capslock), and records each
// LED event the LED core sends ("LED code=1 value=1").
//
// usage: uinput-ff-device NAME CAPS MAX LOG
//   CAPS: comma-separated rumble,periodic,sine,square,gain,leds   MAX: ff_effects_max (0 without
//   force-feedback capabilities)
// Prints "READY /dev/input/eventN" once the node exists; SIGTERM destroys the device and exits.
#define _GNU_SOURCE // SCHED_IDLE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/uinput.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;
static void on_signal(int signal) { (void)signal; stopping = 1; }

static void check(int result, const char *what) {
    if (result < 0) {
        fprintf(stderr, "uinput-ff-device: %s: %s\n", what, strerror(errno));
        exit(1);
    }
}

static long long micros(const struct input_event *event) {
    return (long long)event->input_event_sec * 1000000LL + event->input_event_usec;
}

static const char *waveform_name(unsigned code) {
    switch (code) {
    case FF_SINE: return "sine";
    case FF_SQUARE: return "square";
    case FF_TRIANGLE: return "triangle";
    case FF_SAW_UP: return "saw-up";
    case FF_SAW_DOWN: return "saw-down";
    default: return "other";
    }
}

static void record_upload(FILE *log, long long time, const struct ff_effect *effect) {
    fprintf(log, "%lld UPLOAD id=%d length=%u delay=%u ", time, effect->id, effect->replay.length,
            effect->replay.delay);
    if (effect->type == FF_RUMBLE) {
        fprintf(log, "type=rumble strong=%u weak=%u\n", effect->u.rumble.strong_magnitude,
                effect->u.rumble.weak_magnitude);
    } else if (effect->type == FF_PERIODIC) {
        fprintf(log, "type=periodic waveform=%s magnitude=%d period=%u attack=%u\n",
                waveform_name(effect->u.periodic.waveform), effect->u.periodic.magnitude,
                effect->u.periodic.period, effect->u.periodic.envelope.attack_length);
    } else {
        fprintf(log, "type=%u\n", effect->type);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: uinput-ff-device NAME CAPS MAX LOG\n");
        return 64;
    }
    FILE *log = fopen(argv[4], "w");
    if (!log) check(-1, argv[4]);
    setvbuf(log, NULL, _IOLBF, 0);

    int fd = open("/dev/uinput", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    check(fd, "/dev/uinput");
    char caps[256];
    snprintf(caps, sizeof caps, "%s", argv[2]);
    for (char *cap = strtok(caps, ","); cap; cap = strtok(NULL, ",")) {
        if (!strcmp(cap, "leds")) {
            check(ioctl(fd, UI_SET_EVBIT, EV_LED), "UI_SET_EVBIT EV_LED");
            int leds[] = {LED_NUML, LED_CAPSL, LED_SCROLLL};
            for (unsigned i = 0; i < sizeof leds / sizeof leds[0]; i++) check(ioctl(fd, UI_SET_LEDBIT, leds[i]), "UI_SET_LEDBIT");
            continue;
        }
        // uinput refuses EV_FF without effect slots, so the bit comes with the first effect.
        check(ioctl(fd, UI_SET_EVBIT, EV_FF), "UI_SET_EVBIT");
        int bit = !strcmp(cap, "rumble") ? FF_RUMBLE : !strcmp(cap, "periodic") ? FF_PERIODIC
                : !strcmp(cap, "sine") ? FF_SINE : !strcmp(cap, "square") ? FF_SQUARE
                : !strcmp(cap, "gain") ? FF_GAIN : -1;
        if (bit < 0) { fprintf(stderr, "unknown capability %s\n", cap); return 64; }
        check(ioctl(fd, UI_SET_FFBIT, bit), "UI_SET_FFBIT");
    }
    struct uinput_setup setup;
    memset(&setup, 0, sizeof setup);
    setup.id.bustype = BUS_VIRTUAL;
    setup.id.vendor = 0xfb5;
    setup.id.product = 0x1;
    snprintf(setup.name, sizeof setup.name, "%s", argv[1]);
    setup.ff_effects_max = (unsigned)atoi(argv[3]);
    check(ioctl(fd, UI_DEV_SETUP, &setup), "UI_DEV_SETUP");
    check(ioctl(fd, UI_DEV_CREATE), "UI_DEV_CREATE");

    // The node's name: the event<N> entry in the input device's sysfs directory.
    char sysname[64] = "", path[300], node[300] = "";
    check(ioctl(fd, UI_GET_SYSNAME(sizeof sysname), sysname), "UI_GET_SYSNAME");
    snprintf(path, sizeof path, "/sys/devices/virtual/input/%s", sysname);
    for (int attempt = 0; attempt < 200 && !node[0]; attempt++) {
        DIR *dir = opendir(path);
        for (struct dirent *entry; dir && (entry = readdir(dir));) {
            struct stat info;
            if (!strncmp(entry->d_name, "event", 5)) {
                snprintf(node, sizeof node, "/dev/input/%s", entry->d_name);
                if (stat(node, &info) < 0) node[0] = 0;
            }
        }
        if (dir) closedir(dir);
        if (!node[0]) usleep(10000);
    }
    if (!node[0]) { fprintf(stderr, "no event node under %s\n", path); return 1; }

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    printf("READY %s\n", node);
    fflush(stdout);

    // The kernel stamps each event when the writer's write() reaches uinput. Woken at normal
    // priority, this process can pre-empt the writer between two events of one write() and so
    // delay the stamps of the rest; as SCHED_IDLE it runs only when the writer does not.
    struct sched_param idle = {.sched_priority = 0};
    check(sched_setscheduler(0, SCHED_IDLE, &idle), "sched_setscheduler");

    struct pollfd wait = {.fd = fd, .events = POLLIN};
    while (!stopping) {
        if (poll(&wait, 1, -1) < 0) continue;
        struct input_event event;
        while (read(fd, &event, sizeof event) == sizeof event) {
            long long time = micros(&event);
            if (event.type == EV_UINPUT && event.code == UI_FF_UPLOAD) {
                struct uinput_ff_upload upload;
                memset(&upload, 0, sizeof upload);
                upload.request_id = event.value;
                check(ioctl(fd, UI_BEGIN_FF_UPLOAD, &upload), "UI_BEGIN_FF_UPLOAD");
                record_upload(log, time, &upload.effect);
                upload.retval = 0;
                check(ioctl(fd, UI_END_FF_UPLOAD, &upload), "UI_END_FF_UPLOAD");
            } else if (event.type == EV_UINPUT && event.code == UI_FF_ERASE) {
                struct uinput_ff_erase erase;
                memset(&erase, 0, sizeof erase);
                erase.request_id = event.value;
                check(ioctl(fd, UI_BEGIN_FF_ERASE, &erase), "UI_BEGIN_FF_ERASE");
                fprintf(log, "%lld ERASE id=%u\n", time, erase.effect_id);
                erase.retval = 0;
                check(ioctl(fd, UI_END_FF_ERASE, &erase), "UI_END_FF_ERASE");
            } else if (event.type == EV_FF && event.code == FF_GAIN) {
                fprintf(log, "%lld GAIN value=%d\n", time, event.value);
            } else if (event.type == EV_LED) {
                fprintf(log, "%lld LED code=%u value=%d\n", time, event.code, event.value);
            } else if (event.type == EV_FF) {
                fprintf(log, "%lld %s id=%u value=%d\n", time, event.value ? "PLAY" : "STOP", event.code, event.value);
            }
        }
    }
    ioctl(fd, UI_DEV_DESTROY);
    fprintf(log, "0 DESTROYED\n");
    fclose(log);
    close(fd);
    return 0;
}
