#pragma once
// sd-bus and sd-event from libsystemd: feedbackservicesd's D-Bus connection and its loop.
// Declarations only: COptionalLibraries loads the library on first use.
#include <stdint.h>
#include <stdlib.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

/// The address of libsystemd's `sd_bus_object_vtable_format`, which a vtable's start entry points
/// at (SD_BUS_VTABLE_START takes it from the linked library; COptionalLibraries looks it up in the
/// loaded one). NULL when libsystemd cannot be loaded.
const unsigned *fbs_sd_bus_object_vtable_format(void);

/// What a vtable member is (the kinds Swift describes; `csystemd_vtable_new` maps them to sd-bus's).
typedef enum csystemd_member_kind {
    CSYSTEMD_METHOD,
    CSYSTEMD_SIGNAL,
    CSYSTEMD_PROPERTY,
    CSYSTEMD_WRITABLE_PROPERTY,
} csystemd_member_kind;

/// One member of an interface. The strings must outlive the vtable made from it.
typedef struct csystemd_member {
    csystemd_member_kind kind;
    /// The member's name.
    const char *name;
    /// A method's input signature, a signal's arguments, a property's type.
    const char *signature;
    /// A method's output signature ("" for none; unused otherwise).
    const char *result;
    /// Argument names, each followed by a NUL: a method's inputs then outputs, a signal's arguments.
    const char *names;
    /// SD_BUS_VTABLE_* flags.
    uint64_t flags;
} csystemd_member;

/// A vtable for `members` (the SD_BUS_VTABLE_START ... SD_BUS_VTABLE_END that the sd-bus macros
/// build at compile time, built at run time): every method goes to `method`, every property to
/// `get` (and `set` when writable), with the userdata given to sd_bus_add_object_vtable (offset 0).
/// Allocated with malloc; free() it once the object's slot is unreferenced. NULL when out of memory.
static inline sd_bus_vtable *csystemd_vtable_new(
    const csystemd_member *members, size_t count, sd_bus_message_handler_t method,
    sd_bus_property_get_t get, sd_bus_property_set_t set)
{
    sd_bus_vtable *vtable = calloc(count + 2, sizeof *vtable);
    if (vtable == NULL) return NULL;
    // SD_BUS_VTABLE_START(0), with the format variable's address from the loaded library.
    vtable[0] = (sd_bus_vtable) {
        .type = _SD_BUS_VTABLE_START,
        .x.start = {
            .element_size = sizeof(sd_bus_vtable),
            .features = _SD_BUS_VTABLE_PARAM_NAMES,
            .vtable_format_reference = fbs_sd_bus_object_vtable_format(),
        },
    };
    for (size_t index = 0; index < count; index++) {
        const csystemd_member *member = &members[index];
        sd_bus_vtable *entry = &vtable[index + 1];
        entry->flags = member->flags;
        switch (member->kind) {
        case CSYSTEMD_METHOD:
            entry->type = _SD_BUS_VTABLE_METHOD;
            entry->x.method.member = member->name;
            entry->x.method.signature = member->signature;
            entry->x.method.result = member->result;
            entry->x.method.handler = method;
            entry->x.method.offset = 0;
            entry->x.method.names = member->names;
            break;
        case CSYSTEMD_SIGNAL:
            entry->type = _SD_BUS_VTABLE_SIGNAL;
            entry->x.signal.member = member->name;
            entry->x.signal.signature = member->signature;
            entry->x.signal.names = member->names;
            break;
        case CSYSTEMD_PROPERTY:
        case CSYSTEMD_WRITABLE_PROPERTY:
            entry->type = member->kind == CSYSTEMD_PROPERTY ? _SD_BUS_VTABLE_PROPERTY : _SD_BUS_VTABLE_WRITABLE_PROPERTY;
            entry->x.property.member = member->name;
            entry->x.property.signature = member->signature;
            entry->x.property.get = get;
            entry->x.property.set = member->kind == CSYSTEMD_PROPERTY ? NULL : set;
            entry->x.property.offset = 0;
            break;
        }
    }
    vtable[count + 1] = (sd_bus_vtable) SD_BUS_VTABLE_END;
    return vtable;
}
