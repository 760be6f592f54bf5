/* Declarations only (see ../README.md): the Objective-C runtime functions
 * src/ane calls, as documented in Apple's Objective-C Runtime reference. */
#ifndef NECTAR_DECLS_OBJC_RUNTIME_H
#define NECTAR_DECLS_OBJC_RUNTIME_H

typedef struct objc_class *Class;
struct objc_object {
    Class isa;
};
typedef struct objc_object *id;
typedef struct objc_selector *SEL;
typedef struct objc_method *Method;

Class objc_lookUpClass(const char *name);
SEL sel_registerName(const char *str);
const char *sel_getName(SEL sel);
Method class_getInstanceMethod(Class cls, SEL name);
Method class_getClassMethod(Class cls, SEL name);
const char *method_getTypeEncoding(Method m);
Class object_getClass(id obj);
const char *class_getName(Class cls);
typedef signed char BOOL;
BOOL class_respondsToSelector(Class cls, SEL sel);

#endif
